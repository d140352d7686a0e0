"""ATen FX graph -> ``tsr`` module.

Each FX node becomes one ``tsr`` op (or a few), typed from the node's fake
tensor: shape, dtype and the layout its strides show. A node's Python source
line becomes the op's location. An ATen op with no converter becomes a
``tsr.aten_call``, and :attr:`ImportResult.fallbacks` counts them:

    %convolution = tsr.conv %primals_3, %primals_1, %primals_2 {...}
        : (tensor<1x3x8x8xf32, #tsr.layout<nchw>>, ...) -> tensor<1x8x8x8xf32, #tsr.layout<nchw>>
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import AtenCallOp, ConstantOp
from tessera.dialects.tsr.layout import LayoutAttr
from tessera.passes.free_result_layouts import mark_free

from .. import aten_args
from ..errors import ImportFailure
from . import pooling  # noqa: F401 - registers the pooling converters
from .converters import CONVERTERS, NotConvertible
from .types import tensor_type, value_type

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class ImportResult:
    module: ModuleOp
    fallbacks: Counter = field(default_factory=Counter)
    """ATen ops kept as ``tsr.aten_call``, with their counts."""
    output_is_none: list[bool] = field(default_factory=list)
    """Per graph output: True where the graph returns None there (not in the IR)."""


class FxImporter:
    """Imports one ATen-level ``GraphModule`` as ``func.func @<name>``."""

    def __init__(self, gm: torch.fx.GraphModule, name: str = "forward", free_outputs: frozenset[int] = frozenset()):
        self.gm = gm
        self.name = name
        self.free_outputs = free_outputs
        self.block = Block()
        self.values: dict[torch.fx.Node, Any] = {}
        self.fallbacks: Counter = Counter()
        self._scalars: dict[tuple, SSAValue] = {}
        self._loc: FileLineColLoc | None = None

    # -- helpers used by converters -------------------------------------------------
    def emit(self, op: Operation, name: str | None = None) -> Operation:
        if self._loc is not None:
            op.location = self._loc
        if name:
            for r in op.results:
                r.name_hint = _ssa_name(name)
        self.block.add_op(op)
        return op

    def scalar(self, v: bool | int | float) -> SSAValue:
        """A Python number as a ``tsr.constant`` (f64 / i64 / i1: typed later)."""
        key = (type(v), v)
        if key not in self._scalars:
            if isinstance(v, bool):
                attr = IntegerAttr(int(v), i1)
            elif isinstance(v, int):
                attr = IntegerAttr(v, i64)
            else:
                attr = FloatAttr(float(v), f64)
            self._scalars[key] = self.emit(ConstantOp(attr)).results[0]
        return self._scalars[key]

    def operand(self, a: Any) -> SSAValue:
        """An FX argument as an SSA value (numbers become scalar constants; a value
        a converter made already is itself)."""
        if isinstance(a, SSAValue):
            return a
        if isinstance(a, torch.fx.Node):
            v = self.values[a]
            if not isinstance(v, SSAValue):
                raise NotConvertible(f"argument {a.name} is not a single tensor")
            return v
        if isinstance(a, (bool, int, float)):
            return self.scalar(a)
        raise NotConvertible(f"unsupported argument {a!r}")

    # -- import ------------------------------------------------------------------------
    def run(self) -> ImportResult:
        arg_types = []
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n in placeholders:  # tensors, and the sizes of a graph with symbolic ones (i64)
            arg_types.append(value_type(n.meta.get("val")))
        self.block = Block(arg_types=arg_types)
        for n, arg in zip(placeholders, self.block.args):
            arg.name_hint = _ssa_name(n.name)
            self.values[n] = arg
        output_is_none: list[bool] = []
        results: list[SSAValue] = []
        for node in self.gm.graph.nodes:
            self._loc = _location(node)
            if node.op == "call_function":
                self.values[node] = self._call(node)
            elif node.op == "get_attr":
                self.values[node] = self._constant(node)
            elif node.op == "output":
                outs = node.args[0]
                outs = outs if isinstance(outs, (list, tuple)) else (outs,)
                for o in outs:
                    output_is_none.append(o is None)
                    if o is not None:
                        results.append(self.operand(o) if _returnable(o) else _fail(o))
            elif node.op != "placeholder":
                raise ImportFailure(f"unsupported FX node kind '{node.op}' ({node.name})")
        self._loc = None
        self.emit(func.ReturnOp(*results))
        fn = func.FuncOp(self.name, ([a.type for a in self.block.args], [r.type for r in results]), Region(self.block))
        returned = [i for i, none in enumerate(output_is_none) if not none]  # graph output -> result index
        mark_free(fn, {k for k, i in enumerate(returned) if i in self.free_outputs})
        return ImportResult(ModuleOp([fn]), self.fallbacks, output_is_none)

    def _call(self, node: torch.fx.Node) -> Any:
        target = node.target
        if target is operator.getitem:
            src, idx = node.args
            return self.values[src][idx]
        if _is_float(node.meta.get("val")) and (target in _FLOAT_ARITH or target is torch.sym_float):
            return self._float_arith(node)
        if target in _SIZE_ARITH or target is operator.pow:
            return self._size_arith(node)
        if target is torch.ops.higher_order.with_effects:
            return self._with_effects(node)
        if _touches_complex(node):  # no tsr op computes complex numbers
            return self.aten_call(node)
        conv = CONVERTERS.get(target)
        if conv is not None:
            try:
                return conv(self, node, *node.args, **node.kwargs)
            except NotConvertible:
                pass
        if not isinstance(target, torch._ops.OpOverload):
            raise ImportFailure(f"cannot import call of {target} ({node.name})")
        return self.aten_call(node)

    def _size_arith(self, node: torch.fx.Node) -> SSAValue:
        """Arithmetic on the graph's sizes (``s0 * 2``) as ``arith`` ops on ``i64``.

            %mul = arith.muli %s0, %c2 : i64       // s0 * 2; s0 ** 2 is muli %s0, %s0"""
        if node.target is operator.pow:  # s ** k of a whole k >= 1 (duck-sized h * w): k - 1 products
            base, k = node.args
            if not isinstance(base, torch.fx.Node) or not isinstance(k, int) or k < 1:
                raise ImportFailure(f"size arithmetic {node.format_node()}")
            x = out = self.operand(base)
            for _ in range(k - 1):
                out = self.emit(arith.MuliOp(out, x), node.name).results[0]
            return out
        a, b = (self.size_value(v) for v in node.args)
        return self.emit(_SIZE_ARITH[node.target](a, b), node.name).results[0]

    def _float_arith(self, node: torch.fx.Node) -> SSAValue:
        """Float arithmetic on the graph's sizes (``n / 8``, ``n - 1.0``, ``sym_float(n)``:
        BatchNorm's unbiased variance in training) as ops on 0-d ``f64`` tensors,
        which is what a Python float is to the ATen op that reads it:

            %f = tsr.aten_call "aten.scalar_tensor.default"(%n) {...} : (i64) -> tensor<f64>
            %q = tsr.div %f, %c8 : (tensor<f64>, f64) -> tensor<f64>     // n / 8"""
        if node.target is torch.sym_float:
            return self.float_value(node.args[0])
        a, b = (self.float_value(v) for v in node.args)
        op = _FLOAT_ARITH[node.target].create(operands=[a, b], result_types=[_F64_SCALAR])
        return self.emit(op, node.name).results[0]

    def float_value(self, v: torch.fx.Node | int | float) -> SSAValue:
        """A number of the graph as a float: a Python number's ``f64`` constant; a
        size (``i64``) as a 0-d ``f64`` tensor; a float computed from sizes as it is."""
        if not isinstance(v, torch.fx.Node):
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise ImportFailure(f"float arithmetic on {v!r}")
            return self.scalar(float(v))
        value = self.operand(v)
        if value.type != i64:
            return value
        result = (torch.empty((), dtype=torch.float64),)
        (out,) = self.aten_call(v, torch.ops.aten.scalar_tensor.default, (v,), {"dtype": torch.float64}, result,
                                fallback=False)
        return out

    def size_value(self, v: torch.fx.Node | int) -> SSAValue:
        """A size of the graph as an ``i64`` value: a size node's, or a number's constant."""
        if isinstance(v, torch.fx.Node):
            return self.operand(v)
        if not isinstance(v, int) or isinstance(v, bool):
            raise ImportFailure(f"size arithmetic on {v!r}")
        return self.emit(arith.ConstantOp(IntegerAttr(v, i64))).results[0]

    def _with_effects(self, node: torch.fx.Node) -> list:
        """``with_effects(token, op, *args)``: AOTAutograd's ordering of an op with
        side effects (``aten._linalg_check_errors``, which raises on a singular
        matrix) by a token. The op becomes a ``tsr.aten_call`` (kept in program
        order, never removed: it has effects); the token passes through.

            %t2, %r = with_effects(%t, aten.op, %x)   // becomes  %r = tsr.aten_call "aten.op" (%x)
        """
        token, op, *args = node.args
        val = node.meta.get("val")
        results = self.aten_call(node, op, tuple(args), dict(node.kwargs), tuple(val[1:]) if val else ())
        return [self.operand(token), *results]

    def aten_call(self, node: torch.fx.Node, target: Any = None, args: tuple | None = None,
                   kwargs: dict | None = None, results: tuple | None = None, fallback: bool = True) -> Any:
        """Keep ``node`` (or ``target(*args, **kwargs)`` with ``results`` for it)
        as a call into ATen (``tsr.aten_call``); ``fallback``: counted as an op
        tessera could not compile (not a size made a tensor)."""
        if target is None:
            target, args, kwargs = node.target, node.args, dict(node.kwargs)
        if not isinstance(target, torch._ops.OpOverload):
            raise ImportFailure(f"cannot import call of {target} ({node.name})")
        operands: list[SSAValue] = []
        index: dict[torch.fx.Node, int] = {}

        def operand_index(a: Any) -> int:
            if not isinstance(a, torch.fx.Node):
                raise KeyError(a)
            if a not in index:
                index[a] = len(operands)
                operands.append(self.operand(a))
            return index[a]

        try:
            args, kwargs = aten_args.encode_call(args, kwargs, operand_index)
        except (aten_args.UnencodableArgument, NotConvertible) as e:
            raise ImportFailure(f"cannot keep {target} as an ATen call: {e}") from None
        val = node.meta.get("val") if results is None else results
        multi = isinstance(val, (list, tuple))
        rtypes = [value_type(v) for v in val] if multi else [value_type(val)]
        name = f"{target.namespace}.{target._schema.name.split('::')[-1]}.{target._overloadname}"
        props: dict[str, Attribute] = {"callee": StringAttr(name), "args": args}
        if kwargs is not None:
            props["kwargs"] = kwargs
        op = self.emit(AtenCallOp.create(operands=operands, result_types=rtypes, properties=props), node.name)
        if fallback:
            self.fallbacks[name] += 1
        return list(op.results) if multi else op.results[0]

    def _constant(self, node: torch.fx.Node) -> SSAValue:
        t = getattr(self.gm, node.target)  # type: ignore[arg-type]
        if not isinstance(t, torch.Tensor):
            raise ImportFailure(f"constant {node.target} is not a tensor")
        ttype = tensor_type(t)
        data = t.detach().cpu().contiguous().flatten()
        if data.dtype in (torch.float16, torch.bfloat16):
            data = data.float()
        if data.numel() == 0:
            raise ImportFailure(f"constant {node.target} has no elements")
        attr = DenseIntOrFPElementsAttr.from_list(ttype, data.tolist())
        return self.emit(ConstantOp(attr), node.name).results[0]


_SIZE_ARITH = {operator.mul: arith.MuliOp, operator.add: arith.AddiOp, operator.sub: arith.SubiOp,
               operator.floordiv: arith.FloorDivSIOp}
"""The arithmetic of symbolic sizes that AOTAutograd's graphs carry, as ``arith`` ops on ``i64``."""

_FLOAT_ARITH = {operator.mul: tsr.MulOp, operator.add: tsr.AddOp, operator.sub: tsr.SubOp,
                operator.truediv: tsr.DivOp}
"""Float arithmetic on sizes, as ops on 0-d ``f64`` tensors (``FxImporter._float_arith``)."""

_F64_SCALAR = TensorType(f64, [], LayoutAttr(()))


def _is_float(val: Any) -> bool:
    """A float computed from the graph's sizes (a ``SymFloat``)."""
    return isinstance(val, (torch.SymFloat, float))


def import_graph(gm: torch.fx.GraphModule, name: str = "forward",
                 free_outputs: frozenset[int] = frozenset()) -> ImportResult:
    """Import an ATen ``GraphModule`` (its placeholders need ``meta['val']``).
    The graph outputs at ``free_outputs`` may be returned in any layout
    (``{tsr.free_layout}``: a training forward's saved activations)."""
    return FxImporter(gm, name, free_outputs).run()


def _touches_complex(node: torch.fx.Node) -> bool:
    """``node`` reads or returns a complex tensor."""
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    flat = [v for x in vals for v in (x if isinstance(x, (list, tuple)) else (x,))]
    return any(isinstance(v, torch.Tensor) and v.is_complex() for v in flat)


def _returnable(o: Any) -> bool:
    """A graph output tessera returns: a node's tensor or size. A float computed from
    sizes (a ``SymFloat`` that a training forward saves for its backward, as BatchNorm's
    ``n / (n - 1)`` of a 2-D input can be) is a 0-d tensor in the graph, where
    AOTAutograd wants a Python number: the graph runs as ATen."""
    return isinstance(o, torch.fx.Node) and not _is_float(o.meta.get("val"))


def _fail(o: Any) -> SSAValue:
    what = "a float computed from sizes" if isinstance(o, torch.fx.Node) else "not a tensor"
    raise ImportFailure(f"graph output {o} is {what}")


def _ssa_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_$.]", "_", name)


def _location(node: torch.fx.Node) -> FileLineColLoc | None:
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    file, line = frames[-1]
    return FileLineColLoc(StringAttr(file), IntAttr(int(line)), IntAttr(1))
