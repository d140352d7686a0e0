"""``cancel-relayouts``: folds chains of ``tsr.relayout`` and drops the ones that do nothing;
a ``tsr.dim`` reads the sizes of a relayout's input.

    %a = tsr.relayout %x : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
    %b = tsr.relayout %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
    // %b is replaced by %x; %a, left unused, is erased

A relayout of a relayout reads the first one's input instead (a chain becomes
one relayout), and a relayout whose result type is its input's type is
replaced by its input. An inner relayout whose result has other users stays
for them: only the outer one is rewired, so the pass never adds a relayout.
The result type must be equal, not only the same dim order: a relayout from
``tensor<4x8xf32>`` to ``tensor<4x8xf32, #tsr.layout<[0, 1]>>`` stays.

Walk order: forward (definitions before uses). When the walker reaches a
relayout, the relayout that produces its input has already been folded onto
a value that no relayout produces, so one rewrite per relayout collapses a
chain or a tree of any depth. A reverse walk converges too, but an outer
relayout then climbs its chain one level per rewrite, and where the inner
ones stay for other users that is O(depth) rewrites per relayout. What the
climb finds on the way, an inner relayout that already has the outer one's
type, a forward walk leaves as two identical relayouts of one value, for
``cse`` to merge.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tessera.dialects.tsr import DimOp, RelayoutOp


class FoldRelayoutOfRelayout(RewritePattern):
    """``relayout(relayout(x))`` -> ``relayout(x)``; the inner one is erased when unused."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: RelayoutOp, rewriter: PatternRewriter) -> None:
        _read_past_relayout(op, rewriter)


def _read_past_relayout(op: RelayoutOp | DimOp, rewriter: PatternRewriter) -> None:
    """Where ``op`` reads a relayout, it reads that relayout's input; the relayout goes when unused."""
    source = op.input.owner
    if not isinstance(source, RelayoutOp):
        return
    op.operands[0] = source.input
    rewriter.notify_op_modified(op)
    if not source.result.uses:
        rewriter.erase(source)


class DropIdentityRelayout(RewritePattern):
    """A relayout whose result type is its input type is its input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: RelayoutOp, rewriter: PatternRewriter) -> None:
        if op.input.type == op.result.type:
            rewriter.replace(op, [], [op.input])


class DimOfRelayout(RewritePattern):
    """``tsr.dim(relayout(x), d)`` -> ``tsr.dim(x, d)``: a relayout keeps every size.
    A graph of symbolic sizes reads sizes (BatchNorm's element count) from whichever
    tensor it traced them on; read from a relayout, they kept it alive for the size
    alone, and a saved activation relayouted for the return could not be returned in
    the layout it was computed in (``free-result-layouts``)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DimOp, rewriter: PatternRewriter) -> None:
        _read_past_relayout(op, rewriter)


@dataclass(frozen=True)
class CancelRelayouts(ModulePass):
    name = "cancel-relayouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([DropIdentityRelayout(), FoldRelayoutOfRelayout(), DimOfRelayout()]),
            walk_reverse=False,
        ).rewrite_module(op)
