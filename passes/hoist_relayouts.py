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
are read through their own strides and stay as they are (``layout_agnostic.py``).

A relayout of a pooled result that is the same memory in both layouts (a view:
``tensor<1x440x1x1xf32>``) stays below its reduction: moving it up would
transpose the pool's input. Which layout such a pool reads is chosen for the
ops before it (``reduction_layouts.OrientReduction``, in the same walk): where
they would then move to the other layout and fewer relayouts remain, it reads
that one, and this walk then climbs them (a residual chain into a global mean).

Walk order: reverse. A relayout's users are visited before it, and the op
that produces its input after it, so when the walk reaches a producer all the
relayouts hoisted onto its result are already there: a chain of n ops is
climbed in n rewrites (a forward walk revisits the chain once per level).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker, RewritePattern

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import layout_of, with_layout
from tessera.dialects.tsr.shapes import shape_of

from .layout_agnostic import follows_result, hoistable, same_memory
from .reduction_layouts import OrientReduction


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
        if not hoistable(op, src, dst):
            return
        if isinstance(op, tsr.REDUCTION_OPS) and same_memory(tuple(shape_of(result.type)), src, dst):
            return  # a view of a pooled result: OrientReduction chooses the layout the reduction reads
        for i, v in enumerate(op.operands):
            if follows_result(v, op) and layout_of(v.type) != dst:
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
        PatternRewriteWalker(GreedyRewritePatternApplier([OrientReduction(), HoistRelayoutAboveProducer()]),
                             walk_reverse=True).rewrite_module(op)
