"""``fuse-relayouts``: a relayout that meets a kernel disappears into it.

Four cases, each free of extra memory traffic:

- Into its producer: when the relayout's input is computed by a tessera kernel
  op (``dialects/tsr/op_classes.py``) and the relayout is its only user, the
  kernel writes the new layout directly:

      %p = tsr.pad %s, %f {...} : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>
      %r = tsr.relayout %p : (...ncdhw>>) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
      // becomes
      %p = tsr.pad %s, %f {...} : (...) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>

- Into its consumers: when every user of the relayout is a kernel op, the
  kernels read the relayout's input through its own strides instead:

      %r = tsr.relayout %c : (...ndhwc>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
      %v = tsr.reshape %r : (...) -> tensor<1x2x4x1024xf32, #tsr.layout<nchw>>
      // becomes
      %v = tsr.reshape %c : (...ndhwc>>) -> tensor<1x2x4x1024xf32, #tsr.layout<nchw>>

- Into a constant: a relayout of a ``tsr.constant`` (a frozen weight) folds at
  compile time into a constant of the new layout.

- Into a weight packing: a library op that reorders a weight operand into its
  own blocked format once per weight (``tsr.conv``: oneDNN's reorder) reads
  any layout, so a relayout feeding only such operands is dropped; it would
  otherwise copy the weight on every call and defeat the packing's cache:

      %w2 = tsr.relayout %w : (tensor<8x8x3x3xf32, #tsr.layout<nchw>>) -> tensor<8x8x3x3xf32, #tsr.layout<nhwc>>
      %y = tsr.conv %x, %w2 {...}
      // becomes
      %y = tsr.conv %x, %w {...}

A relayout between a library op (convolution, GEMM, ATen call) and another
library op or a graph boundary stays: the library needs the layout its type
names and nothing else writes it. Walk order: forward; each relayout is looked
at once and no rule makes a new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tessera.dialects import tsr
from tessera.dialects.tsr.op_classes import is_kernel_op, is_packed_weight


class FoldRelayoutOfConstant(RewritePattern):
    """``relayout(constant)`` -> a constant stored in the new layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.RelayoutOp, rewriter: PatternRewriter) -> None:
        const = op.input.owner
        if not isinstance(const, tsr.ConstantOp) or not isinstance(const.value, DenseIntOrFPElementsAttr):
            return
        value = DenseIntOrFPElementsAttr(op.result.type, const.value.data)
        folded = tsr.ConstantOp(value)
        folded.result.name_hint = const.result.name_hint
        rewriter.replace(op, folded)
        if not const.result.uses:
            rewriter.erase(const)


class FuseRelayoutIntoProducer(RewritePattern):
    """A kernel whose only user is a relayout writes the relayout's layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.RelayoutOp, rewriter: PatternRewriter) -> None:
        producer = op.input.owner
        if not is_kernel_op(producer) or isinstance(producer, tsr.RelayoutOp) or not op.input.has_one_use():
            return
        name = op.input.name_hint
        new = rewriter.replace_value_with_new_type(op.input, op.result.type)
        new.name_hint = name
        rewriter.replace(op, [], [new])


class FuseRelayoutIntoConsumers(RewritePattern):
    """Kernels that read a relayout read its input instead."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.RelayoutOp, rewriter: PatternRewriter) -> None:
        users = [u.operation for u in op.result.uses]
        if not users or not all(is_kernel_op(u) and not isinstance(u, tsr.RelayoutOp) for u in users):
            return
        rewriter.replace(op, [], [op.input])


class FuseRelayoutIntoWeightPacking(RewritePattern):
    """Weight operands that their op packs itself read the relayout's input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.RelayoutOp, rewriter: PatternRewriter) -> None:
        uses = list(op.result.uses)
        if not uses or not all(is_packed_weight(u.operation, u.index) for u in uses):
            return
        rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class FuseRelayouts(ModulePass):
    name = "fuse-relayouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [FoldRelayoutOfConstant(), FuseRelayoutIntoProducer(), FuseRelayoutIntoConsumers(),
                 FuseRelayoutIntoWeightPacking()]
            ),
            walk_reverse=False,
        ).rewrite_module(op)
