"""``widen-half``: convs and GEMMs of a half dtype computed in f32, and the
tensors between them kept in f32.

On a CPU whose half-precision dot products are slower than f32 FMAs (an Intel
core without AMX: ``vdpbf16ps`` retires one every two cycles, half the f32
rate, and oneDNN's bf16 and f16 convs run at ~90 GFLOP/s against f32's ~165
on BENCHMARKS.md's Xeon), a bf16 network is fastest computed in f32 by
tessera's f32 kernels. Each conv/GEMM of an ``option dtypes`` type becomes its
f32 twin between conversions, and the narrowing conversion after it then
sinks through the ops that read it:

    %y = tsr.conv %x, %w : (tensor<1x8x4x4xbf16>, tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16>
    %r = tsr.relu %y : (tensor<1x8x4x4xbf16>) -> tensor<1x8x4x4xbf16>
    // becomes
    %x32 = tsr.convert %x : (tensor<1x8x4x4xbf16>) -> tensor<1x8x4x4xf32>
    %w32 = tsr.convert %w : (tensor<8x8x1x1xbf16>) -> tensor<8x8x1x1xf32>
    %y32 = tsr.conv %x32, %w32 : (...) -> tensor<1x8x4x4xf32>
    %r32 = tsr.relu %y32 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
    %r = tsr.convert %r32 : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xbf16>

An op that reads a rounded value ``convert(v: f32 -> half)`` reads ``v``
instead when tessera's kernel computes it (elementwise ops, views, pads,
concats, reductions, upsampling; ``KERNEL_OPS`` but comparisons) or it is a
conv/GEMM; one whose result is half gets an f32 result and the rounding after
it, and a widening ``convert(... -> f32)`` of the rounded value is the value.
Other half operands of such an op are widened exactly. So a chain of convs,
BatchNorms, activations and residual adds runs in f32 from the graph's inputs
to its outputs, where the rounding to the model's dtype stays; comparisons,
ATen calls and the results keep it too.

What changes numerically: the intermediate roundings eager makes after every
op are skipped, as tessera's fused kernels already skip them inside a kernel
(ATen's opmath). Results are closer to float64 than eager's, and differ from
eager's by eager's own rounding error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, bf16, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.dialects import tsr
from tessera.dialects.tsr.op_classes import KERNEL_OPS
from tessera.dialects.tsr.shapes import elem_of, with_elem

HALF_TYPES: dict[str, Attribute] = {"bf16": bf16, "f16": f16}
CONVS, GEMMS = (tsr.ConvOp,), (tsr.MatmulOp, tsr.BmmOp, tsr.AddmmOp)
"""The ops widened wherever they compute a half dtype (GEMMs as ``option gemms`` says)."""
SEEDS = CONVS + GEMMS
MOVES = (tsr.UpsampleOp, tsr.RelayoutOp, tsr.PermuteOp, tsr.ReshapeOp, tsr.ExpandOp, tsr.SliceOp)
"""Data movement done on the widened input where only a widened op reads it, so the
passes after see the conv's upsample or the GEMM's transposed weight."""


class _Widener:
    """Widens the seeds, then walks forward from their f32 results: every value
    reached is f32 computed from unrounded values, and every rounding of one to
    half sinks past the ops that read it."""

    def __init__(self, halves: tuple[Attribute, ...], seeds: tuple[type[Operation], ...]):
        self.halves, self.seeds = halves, seeds
        self.reached: list[SSAValue] = []
        self.sinking: set[Operation] = set()
        self.done: set[Operation] = set()

    def _reads_unrounded(self, op: Operation) -> bool:
        """``op`` may read a value before its rounding to half: tessera computes it in f32 anyway."""
        return isinstance(op, self.seeds) or (isinstance(op, KERNEL_OPS)
                                              and not isinstance(op, (tsr.CmpOp, tsr.ConvertOp)))

    def _is_half(self, v: SSAValue) -> bool:
        return isinstance(v.type, TensorType) and elem_of(v.type) in self.halves

    def _f32(self, v: SSAValue, before: Operation) -> SSAValue:
        """``v`` in f32: the value a sinking rounding rounded, the data movement that
        made ``v`` (for ``before`` alone) done on its input widened, or ``v`` widened (exact)."""
        owner = v.owner
        if owner in self.sinking:
            return owner.input
        if isinstance(owner, MOVES) and v.has_one_use() and self._is_half(owner.operands[0]):
            moved = type(owner).create(operands=[self._f32(owner.operands[0], owner), *owner.operands[1:]],
                                       result_types=[with_elem(v.type, f32)], properties=dict(owner.properties),
                                       attributes=dict(owner.attributes))
            moved.results[0].name_hint = v.name_hint
            Rewriter.insert_op(moved, InsertPoint.before(owner))
            return moved.results[0]
        wide = tsr.ConvertOp.create(operands=[v], result_types=[with_elem(v.type, f32)])
        Rewriter.insert_op(wide, InsertPoint.before(before))
        return wide.result

    def widen(self, op: Operation) -> None:
        """``op`` computed from f32 operands; its half results get f32 types and a
        rounding after it. Its f32 results are reached."""
        self.done.add(op)
        operands = [self._f32(v, op) if self._is_half(v) else v for v in op.operands]
        if not any(self._is_half(r) for r in op.results):
            for i, v in enumerate(operands):
                if op.operands[i] is not v:
                    op.operands[i] = v
            self.reached.extend(op.results)
            return
        new = type(op).create(operands=operands, result_types=[with_elem(r.type, f32) for r in op.results],
                              properties=dict(op.properties), attributes=dict(op.attributes))
        self.done.add(new)
        Rewriter.insert_op(new, InsertPoint.before(op))
        for old, wide in zip(op.results, new.results):
            wide.name_hint = old.name_hint
            value = wide
            if self._is_half(old):
                back = tsr.ConvertOp.create(operands=[wide], result_types=[old.type])
                back.result.name_hint = old.name_hint
                Rewriter.insert_op(back, InsertPoint.before(op))
                value = back.result
            old.replace_all_uses_with(value)
        Rewriter.erase_op(op)
        self.reached.extend(new.results)

    def _sink(self, back: tsr.ConvertOp) -> None:
        """The ops reading rounding ``back`` read the value it rounds."""
        self.sinking.add(back)
        for use in list(back.result.uses):
            user = use.operation
            if user.parent is None:
                continue
            if isinstance(user, tsr.ConvertOp) and user.result.type == back.input.type:
                user.result.replace_all_uses_with(back.input)
                Rewriter.erase_op(user)
                self.reached.append(back.input)
            elif self._reads_unrounded(user):
                self.widen(user)
        if not back.result.uses:
            Rewriter.erase_op(back)

    def run(self, seeds: list[Operation]) -> None:
        for seed in seeds:
            self.widen(seed)
        while self.reached:
            value = self.reached.pop()
            for use in list(value.uses):
                user = use.operation
                if user.parent is None or user in self.done:
                    continue
                if isinstance(user, tsr.ConvertOp) and self._is_half(user.result):
                    self.done.add(user)
                    self._sink(user)
                elif self._reads_unrounded(user):
                    self.widen(user)


@dataclass(frozen=True)
class WidenHalf(ModulePass):
    name = "widen-half"

    dtypes: str = "bf16,f16"
    """The half types computed in f32 (comma-separated; empty: none)."""
    gemms: bool = True
    """Widen matmuls too. Off without freezing: a GEMM's weight would then be widened
    on every call, every layer's before the first (the program's weight-preparing
    step), so a bf16 language model would hold an f32 copy of its weights (twice
    their bytes) through each call; a conv's weight is small beside its activations."""

    def __post_init__(self) -> None:
        unknown = [d for d in self._names() if d not in HALF_TYPES]
        if unknown:
            raise ValueError(f"dtypes takes {', '.join(HALF_TYPES)}, got '{', '.join(unknown)}'")

    def _names(self) -> list[str]:
        return [d.strip() for d in self.dtypes.split(",") if d.strip()]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        widener = _Widener(tuple(HALF_TYPES[d] for d in self._names()), SEEDS if self.gemms else CONVS)
        widener.run([o for o in op.walk() if isinstance(o, widener.seeds) and widener._is_half(o.results[0])])
