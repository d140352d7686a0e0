"""The host graph of the ``kernel`` stage as a runtime :class:`Program`.

    %p = tsr.launch @fused_0(%x, %s) : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
    %y = tsr.conv %p, %w, %b {...} : (...) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
    // becomes
    Alloc(p, ndhwc type); Launch(fused_0, (x, s, p)); Call(oneDNN conv, (p, w, b), (y,))

Each ``tsr.launch`` allocates its results in the layouts their types name and
launches the compiled kernel (arguments: the launch's operands, then its
results). Library ops are calls: a convolution goes to oneDNN
(``mkldnn._convolution_pointwise``, its weight packed once) on the CPU in the
layout the passes chose — it writes its input's layout, which
``assign-layouts`` made the result's too; ``tsr.int_mm`` runs tessera's own
exact int8 GEMM.
Every other op left on the host (GEMMs, ``tsr.aten_call``, an op the fusion
left out) runs as ATen through its reference semantics: the program stays
whole and correct, and :attr:`HostProgram.aten_ops` says what ran that way.
A library result whose strides differ from its type is stored in the declared
layout, and counted in :attr:`HostProgram.layout_fixups` (the layout passes
should leave none).
"""

from __future__ import annotations

import collections
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.shapes import ints
from tessera.runtime.layouts import Placement, in_layout
from tessera.runtime.module import Module
from tessera.runtime.program import Alloc, Call, Launch, Program

from .errors import TesseraError
from .interpreter import find_function
from .interpreter.impls import IMPLS, scalar_value
from .ir_io import op_location


_CPU = types.SimpleNamespace(device=torch.device("cpu"))  # what reference semantics read of their interpreter


class HostProgramError(TesseraError):
    """The host graph has an op the program cannot run."""


@dataclass
class HostProgram:
    program: Program
    aten_ops: collections.Counter = field(default_factory=collections.Counter)
    layout_fixups: list[str] = field(default_factory=list)

    def __call__(self, *tensors: torch.Tensor) -> list[torch.Tensor]:
        return self.program.run(*tensors)


class OneDnnConv:
    """oneDNN's convolution for one ``tsr.conv``: the weight reordered once into
    the blocked format oneDNN computes with (as Inductor does under freezing)
    and kept while the weight tensor is unchanged — same storage, same version
    counter — so a parameter updated in place is packed again. Tensors oneDNN
    does not take go through ATen's dispatch."""

    def __init__(self, op: tsr.ConvOp):
        self.stride, self.padding = ints(op.stride), ints(op.padding)
        self.dilation, self.groups = ints(op.dilation), op.groups.value.data
        self.input_size = list(op.input.type.get_shape())
        self._packed: tuple[tuple, torch.Tensor] | None = None
        self.__name__ = "onednn_conv"

    def _weight(self, w: torch.Tensor) -> torch.Tensor:
        key = (w.data_ptr(), w._version, tuple(w.shape), tuple(w.stride()), w.dtype)
        if self._packed is None or self._packed[0] != key:
            packed = torch.ops.mkldnn._reorder_convolution_weight(
                w, self.padding, self.stride, self.dilation, self.groups, self.input_size)
            self._packed = (key, packed)
        return self._packed[1]

    def __call__(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        if (x.device.type == "cpu" and x.dtype in (torch.float32, torch.bfloat16) and torch.backends.mkldnn.is_available()
                and not torch.is_grad_enabled()):
            return torch.ops.mkldnn._convolution_pointwise(
                x, self._weight(w), b, self.padding, self.stride, self.dilation, self.groups, "none", [], "")
        return torch.ops.aten.convolution(x, w, b, self.stride, self.padding, self.dilation, False,
                                          [0] * len(self.stride), self.groups)


class Int8Gemm:
    """``tsr.int_mm`` through tessera's exact int8 GEMM (``codegen/int8_gemm``,
    the host's fastest of AVX-512 VNNI, AVX-VNNI, AVX2); ATen's ``_int_mm``
    where that path cannot run (another device, a CPU without AVX2)."""

    __name__ = "tessera_int8_gemm"

    def __init__(self):
        from .codegen.int8_gemm import can_run, int8_mm, select_isa

        isa = select_isa()
        self.isa = isa if can_run(isa) else None
        self._int8_mm = int8_mm

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.isa is None or a.device.type != "cpu":
            return torch._int_mm(a, b)
        return self._int8_mm(a.contiguous(), b.contiguous(), isa=self.isa)


class _Builder:
    def __init__(self, kernels: Module | None):
        self.kernels = kernels
        self.ids: dict[SSAValue, int] = {}
        self.scalars: dict[SSAValue, object] = {}
        self.steps: list = []
        self.result = HostProgram(Program((), (), ()))

    def buffer(self, v: SSAValue) -> int:
        if v not in self.ids:
            self.ids[v] = len(self.ids)
        return self.ids[v]

    def operand(self, v: SSAValue, user: Operation) -> int:
        if v not in self.ids:
            raise HostProgramError(f"'{user.name}' reads a value the program does not hold", op_location(user))
        return self.ids[v]

    def add(self, op: Operation) -> None:
        if isinstance(op, tsr.ConstantOp):
            if isinstance(op.value, DenseIntOrFPElementsAttr):
                t = in_layout(IMPLS[tsr.ConstantOp](op, _CPU), op.result.type)
                self.steps.append(Call(lambda t=t: t, (), (self.buffer(op.result),)))
            else:
                self.scalars[op.result] = scalar_value(op.value)
        elif isinstance(op, tsr.LaunchOp):
            if self.kernels is None:
                raise HostProgramError("the host graph launches kernels but none were compiled", op_location(op))
            kernel = self.kernels.kernel(op.callee.string_value())
            outs = [self.buffer(r) for r in op.outs]
            for b, r in zip(outs, op.outs):
                self.steps.append(Alloc(b, r.type))
            args = tuple(self.operand(v, op) for v in op.inputs) + tuple(outs)
            self.steps.append(Launch(kernel, args))
        elif isinstance(op, tsr.ConvOp):
            self._call(op, OneDnnConv(op))
        elif isinstance(op, tsr.IntMmOp):
            self._call(op, Int8Gemm())
        elif type(op) in IMPLS:
            impl = IMPLS[type(op)]
            self.result.aten_ops[op.name] += 1
            self._call(op, lambda *xs, op=op, impl=impl: impl(op, _CPU, *xs))
        else:
            raise HostProgramError(f"no way to run '{op.name}' on the host", op_location(op))

    def _call(self, op: Operation, fn: Callable) -> None:
        """``fn`` on the op's tensor operands (scalars bound in place); results
        stored in the layouts the op's types name."""
        tensor_pos = [i for i, v in enumerate(op.operands) if v not in self.scalars]
        fixed = {i: self.scalars[v] for i, v in enumerate(op.operands) if v in self.scalars}
        types = [(r.type, Placement.of(r.type)) if isinstance(r.type, TensorType) else (r.type, None) for r in op.results]
        fixups = self.result.layout_fixups
        where = f"{op.name} at {op_location(op)}"

        def call(*tensors):
            it = iter(tensors)
            args = [fixed[i] if i in fixed else next(it) for i in range(len(op.operands))]
            out = fn(*args)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            placed = []
            for t, (ty, placement) in zip(outs, types):
                if placement is not None and not placement.holds(t):
                    fixups.append(where)
                    t = in_layout(t, ty)
                placed.append(t)
            return placed

        call.__name__ = op.name
        args = tuple(self.operand(op.operands[i], op) for i in tensor_pos)
        self.steps.append(Call(call, args, tuple(self.buffer(r) for r in op.results)))


def build_host_program(host: ModuleOp, kernels: Module | None, function: str = "forward") -> HostProgram:
    """The program of ``@function`` in ``host``, launching ``kernels``'s kernels."""
    fn = find_function(host, function)
    b = _Builder(kernels)
    inputs = tuple(b.buffer(a) for a in fn.body.block.args)
    outputs: tuple[int, ...] = ()
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            outputs = tuple(b.operand(v, op) for v in op.operands)
            break
        b.add(op)
    b.result.program = Program(tuple(b.steps), inputs, outputs)
    return b.result
