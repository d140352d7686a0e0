"""Where an op's dynamic result dims come from: each is an affine function of
one operand's size, floor-divided by a number, known at run time only.

    %p = tsr.pad %x, %z {low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 2>}   // x: tensor<1x8x?xf32>
    dim_source(%p.owner, 2) == DimSource(operand=0, dim=2, mul=1, add=3)         // size(x, 2) + 3
    %s = tsr.slice %x {dim = 2, start = 1, end = 9223372036854775807, step = 1}  // x[:, :, 1:]
    dim_source(%s.owner, 2) == DimSource(0, 2, 1, -1)
    %t = tsr.slice %x {dim = 2, start = 1, end = -2, step = 2}                   // x[:, :, 1:-2:2]
    dim_source(%t.owner, 2) == DimSource(0, 2, 1, -2, 2)                         // (size(x, 2) - 2) // 2

``fuse-kernels`` keeps on the host (ATen's call, which sizes its result
itself) an op with a dynamic dim that has no source: a concat along it, a
slice of it that starts from its end. The kernel lowering (``lowering/dim_exprs.py``) follows
the sources back to the fused kernel's inputs, which the host allocates from.

A slice of a dynamic dim keeps Python's bounds (``tsr.slice``): a negative
``start``/``end`` counts from the end, an ``end`` past every size
(:data:`SLICE_TO_END`) runs to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from .ops_core import ConvertOp, RelayoutOp
from .ops_elementwise import ELEMENTWISE_OPS
from .ops_nn import REDUCTION_OPS, UpsampleOp
from .ops_polyphase import PolyphaseInterleaveOp
from .ops_shape import ConcatOp, DimOp, ExpandOp, PadOp, PermuteOp, ReshapeOp, SliceOp
from .shapes import DYNAMIC, ints, shape_of

SLICE_TO_END = 2**62
"""A slice ``end`` at least this large runs to the end of the dim (ATen's ``x[1:]`` is ``end = 2**63 - 1``)."""


@dataclass(frozen=True)
class DimSource:
    """``(size(operand #operand, dim) * mul + add) // div``."""

    operand: int
    dim: int
    mul: int = 1
    add: int = 0
    div: int = 1

    def applied_to(self, size: DimSource | int) -> DimSource | int | None:
        """This source's ``(* mul + add) // div`` applied to ``size``, what its
        operand's dim is (a number, or itself a source: the sources of a chain of
        ops compose); None where they do not compose into one source (a multiple
        of a quotient: ``(n // 2) * 2``)."""
        if isinstance(size, int):
            return (size * self.mul + self.add) // self.div
        if size.div == 1:
            return DimSource(size.operand, size.dim, size.mul * self.mul, size.add * self.mul + self.add, self.div)
        if self.mul == 1:  # (q // d1 + a) // d2 == (q + a * d1) // (d1 * d2)
            return DimSource(size.operand, size.dim, size.mul, size.add + self.add * size.div, size.div * self.div)
        return None


def dim_source(op: Operation, d: int) -> DimSource | int | None:
    """Where dim ``d`` of ``op``'s (first) result comes from: the dim itself when
    static, a :class:`DimSource` when dynamic and affine in one operand's size,
    else None."""
    rank = len(shape_of(op.results[0].type))
    n = shape_of(op.results[0].type)[d]
    if n != DYNAMIC:
        return n
    if isinstance(op, (*ELEMENTWISE_OPS, ExpandOp)):
        for i, x in enumerate(op.operands):  # broadcasting: the operand whose dim is dynamic there
            if isinstance(x.type, TensorType):
                lead = rank - len(shape_of(x.type))
                if d >= lead and shape_of(x.type)[d - lead] == DYNAMIC:
                    return DimSource(i, d - lead)
        return None
    if isinstance(op, (ConvertOp, RelayoutOp)):
        return DimSource(0, d)
    if isinstance(op, PermuteOp):
        return DimSource(0, ints(op.dims)[d])
    if isinstance(op, PadOp):
        return DimSource(0, d, 1, ints(op.low)[d] + ints(op.high)[d])
    if isinstance(op, SliceOp):
        return DimSource(0, d) if op.dim.value.data % rank != d else _slice_source(op, d)
    if isinstance(op, ConcatOp):
        return DimSource(0, d) if op.dim.value.data % rank != d else None
    if isinstance(op, UpsampleOp):
        repeats = op.repeats() if d >= 2 else None
        if d < 2:
            return DimSource(0, d)
        return DimSource(0, d, repeats[d - 2]) if repeats and not _divided(op.operands[0], d) else None
    if isinstance(op, PolyphaseInterleaveOp):
        if d < 2:
            return DimSource(0, d) if d == 0 else None
        if _divided(op.operands[0], d):
            return None
        scale, shifts = ints(op.scales)[d - 2], op.dim_shifts()[d - 2]
        return DimSource(0, d, scale, -scale * max(shifts))  # each phase holds its input's n - shift rows
    if isinstance(op, ReshapeOp):
        anchors = reshape_anchors(op)
        return None if anchors is None else next(DimSource(0, k) for k, r in anchors if r == d)
    if isinstance(op, REDUCTION_OPS):
        kept = [k for k in range(len(shape_of(op.input.type)))
                if op.keepdim.value.data or k not in op.reduced_dims()]
        return DimSource(0, kept[d])
    return None


def _divided(v: SSAValue, d: int) -> bool:
    """Whether dim ``d`` of ``v`` is sized through a quotient (a strided slice): a multiple
    of it (an upsample's) would be no :class:`DimSource` in a kernel that computes both,
    so the multiplying op stays on the host, which sizes it from the tensor itself."""
    while isinstance(v.owner, Operation) and v.owner.results and v.owner.results[0] is v:
        if shape_of(v.type)[d] != DYNAMIC:
            return False
        src = dim_source(v.owner, d)
        if not isinstance(src, DimSource):
            return False
        if src.div != 1:
            return True
        v, d = v.owner.operands[src.operand], src.dim
    return False


def _slice_source(op: SliceOp, d: int) -> DimSource | None:
    """A slice of a dynamic dim from a start ``s >= 0`` by ``step``: to the end
    (``ceil((n - s) / step)``) or to ``e < 0`` from it (``ceil((n + e - s) / step)``)."""
    start, end, step = op.start.value.data, op.end.value.data, op.step.value.data
    if start < 0 or 0 <= end < SLICE_TO_END:
        return None
    return DimSource(0, d, 1, (-start if end >= SLICE_TO_END else end - start) + step - 1, step)


def reshape_anchors(op: ReshapeOp) -> list[tuple[int, int]] | None:
    """A reshape whose dynamic dims are one input dim each: its ``(input dim,
    result dim)`` pairs in order, when each dynamic result dim's size is a
    ``tsr.dim`` of the input's (through relayouts and converts), every dynamic
    input dim is one of them, and the static dims between them reshape among
    themselves (equal products); else None. A kernel indexes through such a
    reshape (``lowering/index_maps.anchored_reshape``):

        %h = tsr.dim %x {dim = 3 : i64} : (tensor<1x1x32x?x?xf32>) -> i64    // and %w: dim 4
        %r = tsr.reshape %x, %h, %w : (tensor<1x1x32x?x?xf32>, i64, i64) -> tensor<1x32x?x?xf32>
        reshape_anchors(%r.owner) == [(3, 2), (4, 3)]
    """
    src, dst = shape_of(op.input.type), shape_of(op.result.type)
    dynamic = [k for k, n in enumerate(src) if n == DYNAMIC]
    origins = {dim_origin(op.input, k): k for k in dynamic}
    if len(origins) != len(dynamic):
        return None
    anchors: list[tuple[int, int]] = []
    sizes = iter(op.sizes)
    for d, n in enumerate(dst):
        if n != DYNAMIC:
            continue
        owner = next(sizes).owner
        k = origins.get(dim_origin(owner.input, owner.dim.value.data)) if isinstance(owner, DimOp) else None
        if k is None:
            return None
        anchors.append((k, d))
    if [k for k, _ in anchors] != dynamic:
        return None  # out of order, repeated, or a dynamic input dim within a static run
    bounds = [(-1, -1), *anchors, (len(src), len(dst))]
    if any(math.prod(src[a + 1:b]) != math.prod(dst[c + 1:e]) for (a, c), (b, e) in zip(bounds, bounds[1:])):
        return None
    return anchors


def dim_origin(v: SSAValue, d: int) -> tuple[SSAValue, int]:
    """The earliest value and dim that ``v``'s dim ``d`` is the size of, through
    ops whose result dim is one operand's dim as it is (pointwise ops, relayouts,
    permutes, a reshape's anchors): two dims of one origin have one size.

        %y = tsr.relayout %x ...; %z = tsr.exp %y ...     // dim_origin(%z, 2) == (%x, 2)
    """
    while isinstance(v.owner, Operation) and v.owner.results and v.owner.results[0] is v:
        shape = shape_of(v.type) if isinstance(v.type, TensorType) else []
        if d >= len(shape) or shape[d] != DYNAMIC:
            break
        src = dim_source(v.owner, d)
        if not isinstance(src, DimSource) or (src.mul, src.add, src.div) != (1, 0, 1):
            break
        v, d = v.owner.operands[src.operand], src.dim
    return v, d


def sized_at_run_time(op: Operation) -> bool:
    """Every dynamic dim of ``op``'s results has a source (:func:`dim_source`)."""
    return all(dim_source(op, d) is not None
               for r in op.results if isinstance(r.type, TensorType)
               for d, n in enumerate(shape_of(r.type)) if n == DYNAMIC)
