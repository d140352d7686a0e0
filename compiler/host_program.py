"""The host graph of the ``kernel`` stage as a runtime :class:`Program`.

    %p = tsr.launch @fused_0(%x, %s) : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
    %y = tsr.conv %p, %w, %b {...} : (...) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
    // becomes
    Alloc(p, ndhwc type); Launch(fused_0, (x, s, p)); Call(oneDNN conv, (p, w, b), (y,))

Each ``tsr.launch`` allocates its results in the layouts their types name and
launches the compiled kernel (arguments: the launch's operands, then its
results). Library ops run as the target says (``Target.host_call``): on one
of its own kernels (a :class:`KernelCall`: an x86 conv ``select-impl`` gave
tessera's kernel, launched the same way after a step that packs its weight),
or as a call (oneDNN's conv and MKL's GEMM on a CPU, ``library_calls``;
tessera's exact int8 GEMM on x86; cuDNN through ATen on a GPU), weights packed
once per weight version (``weight_cache``); values computed from parameters
alone are prepared once per parameter version (``weight_preparation``).
Every other op left on the host (GEMMs, ``tsr.aten_call``, an op the fusion
left out) runs as ATen through its reference semantics: the program stays
whole and correct, and :attr:`HostProgram.report` says what ran that way
(and counts the kernels and library calls).
A library result whose strides differ from its type is stored in the declared
layout, and counted in :attr:`HostProgram.layout_fixups` (the layout passes
should leave none). Every step holds what it read of its op, not the op
(``host_steps``): the program pickles whole, and the graph cache stores it
(``host_plan``).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from tessera.compiler.placements import in_layout, placement_of, placement_or_order
from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.op_classes import LIBRARY_OPS
from tessera.dialects.tsr.shapes import elem_of
from tessera.runtime.layouts import Placement, SizedLayout
from tessera.runtime.module import Module
from tessera.runtime.program import Alloc, Call, Launch, Program, SizedAlloc, Step, defines, reads

from .errors import TesseraError
from .host_steps import (
    Constant,
    HostProgram,
    IrOp,
    PlacedCall,
    PreparedWeights,
    callee_function,
    fresh_copy,
)
from .interpreter import find_function
from .interpreter.impls import BINDINGS, IMPLS, scalar_value
from .ir_io import op_location, print_module
from .library_calls import REFERENCE_CPU
from .lowering.dim_exprs import RESULT_DIMS, decode_result_dims
from .report import GraphReport
from .targets import Target, host_cpu
from .targets.base import KernelCall
from .weight_cache import PackedWeight
from .weight_preparation import weight_preparation


class HostProgramError(TesseraError):
    """The host graph has an op the program cannot run."""


class _Builder:
    def __init__(self, kernels: Module | None, target: Target, device: torch.device, freezing: bool,
                 preparing: Sequence[Operation] = ()):
        self.preparing = set(preparing)
        """The ops that prepare weights from parameters alone (``weight_preparation``)."""
        self.prepare: list[Step] = []
        """Their steps, and the weight packs of those weights: one step of the program (:func:`_prepare_step`)."""
        self.prepare_at: int | None = None
        """Where that step goes: before the first step that reads what it makes."""
        self.target = target
        self.device = device
        self.freezing = freezing
        self.env = REFERENCE_CPU if device.type == "cpu" else types.SimpleNamespace(device=device)  # reference ops' device
        self.kernels = kernels
        self.ids: dict[SSAValue | object, int] = {}
        self.scalars: dict[SSAValue, object] = {}
        self.steps: list = []
        self.result = HostProgram(Program((), (), ()), ())

    def buffer(self, v: SSAValue | object) -> int:
        """``v``'s buffer id (a new one on first sight)."""
        if v not in self.ids:
            self.ids[v] = len(self.ids)
        return self.ids[v]

    def new_buffer(self) -> int:
        """A buffer no IR value names (a packed weight)."""
        return self.buffer(object())

    def operand(self, v: SSAValue, user: Operation) -> int:
        if v not in self.ids:
            raise HostProgramError(f"'{user.name}' reads a value the program does not hold", op_location(user))
        return self.ids[v]

    def output(self, v: SSAValue, ret: Operation) -> int:
        """The buffer of returned value ``v``: a constant's is copied on each
        run, so a caller that writes to its result does not change the next one."""
        if not isinstance(v.owner, tsr.ConstantOp):
            return self.operand(v, ret)
        copy = self.new_buffer()
        self.steps.append(Call(fresh_copy, (self.operand(v, ret),), (copy,)))
        return copy

    def add(self, op: Operation) -> None:
        if op in self.preparing:
            main, self.steps = self.steps, self.prepare
            try:
                self._add(op)
            finally:
                self.steps = main
            self._prepared_before(len(self.steps))
        else:
            self._add(op)

    def _prepared_before(self, at: int) -> None:
        self.prepare_at = at if self.prepare_at is None else self.prepare_at

    def _from_parameters(self, v: SSAValue) -> bool:
        """Whether ``v`` is a function argument or prepared from them (under
        freezing, what reads it runs once per parameter version)."""
        return not isinstance(v.owner, Operation) or v.owner in self.preparing

    def _add(self, op: Operation) -> None:
        if isinstance(op, tsr.ConstantOp):
            if isinstance(op.value, DenseIntOrFPElementsAttr):
                t = in_layout(IMPLS[tsr.ConstantOp](op, self.env), op.result.type)
                self.steps.append(Call(Constant(t), (), (self.buffer(op.result),)))
            else:
                self.scalars[op.result] = scalar_value(op.value)
        elif isinstance(op, tsr.LaunchOp):
            if self.kernels is None:
                raise HostProgramError("the host graph launches kernels but none were compiled", op_location(op))
            kernel = self.kernels.kernel(op.callee.string_value())
            outs = [self.buffer(r) for r in op.outs]
            ins = tuple(self.operand(v, op) for v in op.inputs)
            attr = op.attributes.get(RESULT_DIMS)
            sized = decode_result_dims(attr) if attr is not None else None
            for k, (b, r) in enumerate(zip(outs, op.outs)):
                if sized is None:
                    self.steps.append(Alloc(b, placement_of(r.type)))
                else:  # dynamic sizes: allocated from the inputs' on each run
                    layout = SizedLayout(dtypes.to_torch(elem_of(r.type)), sized[k], tuple(layout_of(r.type)))
                    self.steps.append(SizedAlloc(b, layout, ins))  # kept between runs of these sizes
            args = ins + tuple(outs)
            self.steps.append(Launch(kernel, args))
            self.result.report.kernels += 1
        elif (call := self.target.host_call(op, self.freezing)) is not None:
            if isinstance(call, KernelCall):
                self._launch(op, call)
            else:
                self._call(op, call)
        elif type(op) in IMPLS:
            _count_host_op(self.result.report, op)
            self._call(op, bind_reference(op, self.env.device), library=False)
        else:
            raise HostProgramError(f"no way to run '{op.name}' on the host", op_location(op))

    def _launch(self, op: Operation, call: KernelCall) -> None:
        """``op`` on one of the target's own kernels: each operand ``call`` prepares
        (a weight to pack) into a buffer no IR value names, then a launch like a
        fused kernel's. With ``freezing`` a weight of parameters is packed in the
        step that prepares weights (one check of the parameters a call, not one
        per conv); any other by a step of its own, again when the weight changes
        (:class:`PackedWeight`: on every call without ``freezing``, into buffers
        kept between calls where the packer has ``per_call``: ``conv/kept.py``)."""
        args = [self.operand(v, op) for v in op.operands]
        for i, prepare in call.prepare:
            args[i] = self.new_buffer()
            source = self.operand(op.operands[i], op)
            inside = self.steps is self.prepare  # a preparing op's own weight
            if inside or (self.freezing and self._from_parameters(op.operands[i])):  # packed whenever that step runs
                self.prepare.append(Call(PackedWeight(prepare, False), (source,), (args[i],)))
                if not inside:
                    self._prepared_before(len(self.steps))
            else:  # without freezing on every call: into buffers kept between calls, where the packer has them
                per_call = getattr(prepare, "per_call", None) if not self.freezing else None
                self.steps.append(Call(PackedWeight(per_call() if per_call else prepare, self.freezing), (source,),
                                       (args[i],)))
        outs = [self.buffer(r) for r in op.results]
        self.result.report.conv_kernels += 1
        for b, r in zip(outs, op.results):
            if call.sized:  # dynamic sizes: the kernel gives the output's placement from its input
                self.steps.append(SizedAlloc(b, call.kernel.layout, (args[0],)))  # kept while sizes repeat
            else:
                self.steps.append(Alloc(b, placement_of(r.type)))
        self.steps.append(Launch(call.kernel, (*args, *outs)))

    def _call(self, op: Operation, fn: Callable, library: bool = True) -> None:
        """``fn`` on the op's tensor operands (scalars bound in place); results
        stored in the layouts the op's types name. A ``library`` call is counted
        in the report by ``fn``'s name."""
        name = getattr(fn, "__name__", op.name)
        if library:
            self.result.report.library[name] += 1
        tensor_pos = [i for i, v in enumerate(op.operands) if v not in self.scalars]
        fixed = {i: self.scalars[v] for i, v in enumerate(op.operands) if v in self.scalars}
        placements = [placement_or_order(r.type) if isinstance(r.type, TensorType) and not _returned_view(op, r)
                      else None for r in op.results]
        call = PlacedCall(fn, op.name, len(op.operands), fixed, placements, f"{op.name} at {op_location(op)}",
                          self.result.layout_fixups, of_sizes=_of_sizes_only(op))
        args = tuple(self.operand(op.operands[i], op) for i in tensor_pos)
        self.steps.append(Call(call, args, tuple(self.buffer(r) for r in op.results)))


VIEW_OPS = (tsr.PermuteOp, tsr.ReshapeOp, tsr.ExpandOp, tsr.SliceOp, tsr.DimOp)
"""Ops that ATen computes as views of their operand when left on the host (no data moves)."""


def _returned_view(op: Operation, r: SSAValue) -> bool:
    """A view op's result that only the function returns: it stays ATen's view of
    its operand (eager's strides: a returned expand of an input aliases it), not a
    copy into its type's layout, which only kernels need. AOTAutograd rebuilds an
    output that aliases an input from the input and the output's strides and offset,
    so a copy there would be read as a view of the input: wrong values. Of symbolic
    sizes a ``chunk`` stays ATen's ``split`` (:func:`_aten_view`):

        %a, %b = tsr.aten_call "aten.split.Tensor"(%x, %n) ...   // returned: ATen's views
    """
    return (isinstance(op, VIEW_OPS) or _aten_view(op)) and all(isinstance(u.operation, func.ReturnOp) for u in r.uses)


def _aten_view(op: Operation) -> bool:
    """A ``tsr.aten_call`` of an ATen view op: its schema's results alias an argument
    without writing it (``split.Tensor(Tensor(a -> *) self, ...) -> Tensor(a)[]``)."""
    if not isinstance(op, tsr.AtenCallOp):
        return False
    fn = callee_function(op.callee.data)
    return isinstance(fn, torch._ops.OpOverload) and fn.namespace == "aten" and any(
        r.alias_info is not None and not r.alias_info.is_write for r in fn._schema.returns)


def _count_host_op(report: GraphReport, op: Operation) -> None:
    """Counts an op that runs through its ATen reference semantics: a view, a
    library op ATen computes (``tsr.matmul`` -> ``aten.matmul``), or a fallback
    (an op with no ``tsr`` form, an op fusion left out), with the reason."""
    if isinstance(op, VIEW_OPS) or op.dialect_name() == "arith":  # views, sizes and their arithmetic
        report.views[op.name] += 1
    elif isinstance(op, tsr.AtenCallOp) and _of_sizes(op):
        report.views[op.callee.data] += 1
    elif isinstance(op, tsr.AtenCallOp) and op.callee.data.startswith("tessera."):  # tessera's own kernel
        report.library[op.callee.data] += 1
    elif isinstance(op, tsr.AtenCallOp):
        report.aten_ops[f"{op.callee.data} (no tsr form)"] += 1
    elif isinstance(op, LIBRARY_OPS):
        report.library[f"aten.{op.name.removeprefix('tsr.')}"] += 1
    else:
        report.aten_ops[f"{op.name} (not fused)"] += 1


def _of_sizes_only(op: Operation) -> bool:
    """Whether ``op`` computes from sizes alone (a tensor's ``tsr.dim``, size arithmetic,
    a size made a 0-d tensor): a program bound to one run's sizes takes its results as
    constants (``runtime/size_binding.py``)."""
    if isinstance(op, tsr.DimOp) or op.dialect_name() == "arith":
        return True
    return isinstance(op, tsr.AtenCallOp) and _of_sizes(op) and op.callee.data == "aten.scalar_tensor.default"


def _of_sizes(op: tsr.AtenCallOp) -> bool:
    """An ATen call that reads sizes alone (a size made a 0-d tensor, a filled tensor
    of dynamic sizes): it computes from no tensor's data, so it is no fallback."""
    return bool(op.operands) and all(v.type == i64 for v in op.operands)


def build_host_program(host: ModuleOp, kernels: Module | None, function: str = "forward",
                       device: torch.device = REFERENCE_CPU.device, freezing: bool = False,
                       target: Target | None = None) -> HostProgram:
    """The program of ``@function`` in ``host`` for ``target`` (default: this host's
    CPU), launching ``kernels``'s kernels and running library ops as the target says.
    The ops that prepare convolution weights from parameters alone
    (``weight_preparation``) become one step; with ``freezing`` it runs them
    again only when those parameters change (``weight_cache``), else every call."""
    block = find_function(host, function).body.block
    b = _Builder(kernels, target or host_cpu(), device, freezing, weight_preparation(block))
    inputs = tuple(b.buffer(a) for a in block.args)
    outputs: tuple[int, ...] = ()
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            outputs = tuple(b.output(v, op) for v in op.operands)
            break
        b.add(op)
    main = b.steps
    if b.prepare:
        main.insert(b.prepare_at or 0, _prepare_step(b, main, outputs, device))
    b.result.program = Program(tuple(main), inputs, outputs, device)
    b.result.inputs = input_placements(host, function)
    b.result.outputs = output_placements(host, function)
    return b.result


def input_placements(module: ModuleOp, function: str = "forward") -> tuple[Placement | None, ...]:
    """Where ``@function`` takes each argument (None: not a tensor)."""
    args = find_function(module, function).body.block.args
    return tuple(placement_or_order(a.type) if isinstance(a.type, TensorType) else None for a in args)


def output_placements(module: ModuleOp, function: str = "forward") -> tuple[Placement | None, ...]:
    """Where ``@function`` returns each result (None: not a tensor)."""
    results = find_function(module, function).function_type.outputs.data
    return tuple(placement_or_order(t) if isinstance(t, TensorType) else None for t in results)


def _prepare_step(b: _Builder, main: list[Step], outputs: tuple[int, ...], device: torch.device) -> Call:
    """One step running the preparing steps (``b.prepare``), under freezing once
    per version of the buffers they read (:class:`PreparedWeights`), giving the
    values the other steps (``main``) or the function's ``outputs`` use."""
    made = {x for step in b.prepare for x in defines(step)}
    sources = tuple(dict.fromkeys(x for step in b.prepare for x in reads(step) if x not in made))
    used = {x for step in main for x in reads(step)} | set(outputs)
    outs = tuple(x for step in b.prepare for x in defines(step) if x in used)
    # under freezing it runs once per parameter version: nothing kept between its runs
    program = Program(tuple(b.prepare), sources, outs, device, reuse_buffers=not b.freezing)
    return Call(PreparedWeights(program, b.freezing), sources, outs)


def bind_reference(op: Operation, device: torch.device) -> Callable:
    """``op``'s reference semantics as a callable holding what it reads of the op
    (``impls.BINDINGS``: what the interpreter runs too): picklable, run with no IR.
    An op without one keeps its IR (:class:`IrOp`), parsed when first run from the graph cache.

        %v = tsr.permute %x {dims = array<i64: 0, 2, 3, 1>}   ->  View("permute", (0, 2, 3, 1))
    """
    binder = BINDINGS.get(type(op))
    return binder(op, device) if binder is not None else IrOp(_one_op_module(op), str(device))


def _one_op_module(op: Operation) -> str:
    """``op`` alone in ``func.func @op``, its operands the function's arguments."""
    block = Block(arg_types=[v.type for v in op.operands])
    mapper: dict[SSAValue, SSAValue] = dict(zip(op.operands, block.args))
    inner = op.clone(value_mapper=mapper)
    block.add_ops([inner, func.ReturnOp(*inner.results)])
    fn = func.FuncOp("op", ([a.type for a in block.args], [r.type for r in inner.results]), Region(block))
    return print_module(ModuleOp([fn]))
