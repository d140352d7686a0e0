"""``hoist-relayouts``: moves each ``tsr.relayout`` above the layout-agnostic op that
produces its input, toward the producer or the graph input, where it can meet
its inverse (``cancel-relayouts``) or the kernel that writes the data
(``fuse-relayouts``).

    %s = tsr.silu %x : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
    %p = tsr.pad %s, %f {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>
    %r = tsr.relayout %p : (tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
    // becomes
    %xr = tsr.relayout %x : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
    %s  = tsr.silu %xr : (...) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
    %p  = tsr.pad %s, %f {...} : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>

An op is hoisted through when every user of its result is a relayout to one
and the same type: the op then computes in that layout and the relayouts move
onto its operands. An op with another user (a graph output whose strides
eager fixes, a consumer in another layout) is left alone: hoisting would make
it compute twice or relayout twice.

Layout-agnostic ops: elementwise ops, ``tsr.convert``, ``tsr.pad`` (any
low/high), ``tsr.upsample``, ``tsr.slice``, ``tsr.concat``, ATen's pools kept
as ``tsr.aten_call`` (between NCHW and channels-last only), and reductions
with ``keepdim`` over dims that the relayout does not move (GroupNorm's and
LayerNorm's statistics over spatial dims; a reduction over the channel dim,
which nchw -> nhwc moves, stays). Operands of the result's shape follow the
result's new layout; broadcast operands (``tensor<1x8x1x1x1xf32>``, scalars)
are read through their own strides and stay as they are.

Walk order: reverse. A relayout's users are visited before it, and the op
that produces its input after it, so when the walk reaches a producer all the
relayouts hoisted onto its result are already there: a chain of n ops is
climbed in n rewrites (a forward walk revisits the chain once per level).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity, layout_of, with_layout
from tessera.dialects.tsr.shapes import shape_of

SAME_RANK_OPS = (*tsr.ELEMENTWISE_OPS, tsr.ConvertOp, tsr.PadOp, tsr.UpsampleOp, tsr.SliceOp, tsr.ConcatOp)

LAYOUT_FOLLOWING_ATEN = frozenset({
    "aten.max_pool2d.default", "aten.max_pool3d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default",
})
"""ATen ops kept as ``tsr.aten_call`` that compute in the memory format of their
input (channels-last in, channels-last out), one tensor in and one out: pooling.
On channels-last tensors ATen's CPU pools run ~10x faster than on NCHW ones. A
result whose strides differ all the same is copied into its type's layout by
the host program (a layout fix-up), so this is a matter of speed, not of values."""


def moved_dims(src: tuple[int, ...], dst: tuple[int, ...]) -> frozenset[int]:
    """The dims a change of dim order from ``src`` to ``dst`` moves: those outside
    every longest run of dims whose relative order both share.

        moved_dims(nchw, nhwc) == {1}      # the channels move; n, h, w keep their order
    """
    dims = set(src)
    for size in range(len(src), -1, -1):
        keep = [
            set(c)
            for c in combinations(src, size)
            if [d for d in dst if d in c] == list(c)
        ]
        if keep:
            return frozenset(dims - set.intersection(*keep))
    return frozenset(dims)


def _hoistable(op: Operation, src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    if isinstance(op, SAME_RANK_OPS):
        return True
    if isinstance(op, tsr.AtenCallOp):
        rank = len(src)
        return (op.callee.data in LAYOUT_FOLLOWING_ATEN and len(op.inputs) == 1 and rank in (4, 5)
                and {src, dst} <= {identity(rank), channels_last(rank)})
    if isinstance(op, tsr.REDUCTION_OPS):
        return bool(op.keepdim.value.data) and not (set(op.reduced_dims()) & moved_dims(src, dst))
    return False


def _follows_result(v: SSAValue, op: Operation) -> bool:
    """Whether operand ``v`` takes the result's new layout (else it is read as it is)."""
    if not isinstance(v.type, TensorType):
        return False
    if isinstance(op, tsr.ELEMENTWISE_OPS):
        return shape_of(v.type) == shape_of(op.results[0].type)
    return len(shape_of(v.type)) == len(shape_of(op.results[0].type))


class HoistRelayoutAboveProducer(RewritePattern):
    """``relayout(f(x, ...))`` -> ``f(relayout(x), ...)`` for a layout-agnostic ``f``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
            return
        result = op.results[0]
        users = [u.operation for u in result.uses]
        if not users or not all(isinstance(u, tsr.RelayoutOp) for u in users):
            return
        target = users[0].result.type
        if any(u.result.type != target for u in users) or target == result.type:
            return
        src, dst = layout_of(result.type), layout_of(target)
        if not _hoistable(op, src, dst):
            return
        for i, v in enumerate(op.operands):
            if _follows_result(v, op) and layout_of(v.type) != dst:
                r = tsr.RelayoutOp.create(operands=[v], result_types=[with_layout(v.type, dst)])
                rewriter.insert(r)
                op.operands[i] = r.results[0]
        name = result.name_hint
        new = rewriter.replace_value_with_new_type(result, target)
        new.name_hint = name
        for u in users:
            rewriter.replace(u, [], [new])


@dataclass(frozen=True)
class HoistRelayouts(ModulePass):
    name = "hoist-relayouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(HoistRelayoutAboveProducer(), walk_reverse=True).rewrite_module(op)
