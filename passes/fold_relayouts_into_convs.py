"""``fold-relayouts-into-convs``: a conv that tessera's kernel computes reads
its input in the layout it was produced in, instead of a relayout of it, and
writes its result in the layout it is read in:

    %xr = tsr.relayout %x : (tensor<1x64x56x56xf32, #tsr.layout<nchw>>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %y = tsr.conv %xr, %w, %b {...} : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, ...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    // becomes (the relayout is dead once no other op reads it)
    %y = tsr.conv %x, %w, %b {...} : (tensor<1x64x56x56xf32, #tsr.layout<nchw>>, ...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>

tessera's conv kernel broadcasts one input scalar per (pixel, input channel),
so it reads NCHW/NCDHW input as well as channels-last; the relayout kernel's
read and write of the whole input go away. The conv kernel cost model
(``targets/x86/conv_kernel_model.py``, contiguous-input rules, measured end to
end by ``bench/conv_layout_folds.py``) says where that beats the program with
the relayout a kernel of its own: 2-D convs with 16-64 input channels per
group, typically a network's first conv after an NCHW input.
Elsewhere (a channel step jumps a whole plane of the input) the relayout
stays. Likewise at the output: ``relayout(conv)`` to NCHW becomes a conv
writing NCHW (each tile transposed in registers into rows of pixels, one per
channel) where the contiguous-output rules say that beats the relayout kernel
after the conv (2-D convs):

    %y = tsr.conv %x, %w {...} : (...) -> tensor<1x32x56x56xf32, #tsr.layout<nhwc>>
    %z = tsr.relayout %y : (tensor<1x32x56x56xf32, #tsr.layout<nhwc>>) -> tensor<1x32x56x56xf32, #tsr.layout<nchw>>
    // becomes
    %z = tsr.conv %x, %w {...} : (...) -> tensor<1x32x56x56xf32, #tsr.layout<nchw>>

A conv that the kernels already compute in another way as it stands (x86:
Winograd, which reads and writes channels-last only) keeps its
relayouts. The fusion pipeline of a target with its own conv kernel (x86),
before the epilogue fusions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tessera.dialects import tsr

from .fuse_conv_epilogues import replace_by_conv
from .target_models import KernelQuery
from .target_pass import TargetPass, own_kernel_conv


def _folded(conv: tsr.ConvOp, input: SSAValue, result_type: Attribute, query: KernelQuery) -> tsr.ConvOp | None:
    """``conv`` reading ``input`` and giving ``result_type``, where the target's own kernel would compute it."""
    if conv.residual_input is not None and result_type != conv.result.type:
        return None  # the residual is in the result's layout
    return own_kernel_conv(query, input, conv.weight, conv.bias, conv.residual_input, result_type, conv.properties,
                           replacing=conv)


@dataclass
class FoldRelayoutIntoConvInput(RewritePattern):
    query: KernelQuery

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.ConvOp, rewriter: PatternRewriter) -> None:
        relayout = op.input.owner
        if not isinstance(relayout, tsr.RelayoutOp):
            return
        folded = _folded(op, relayout.input, op.result.type, self.query)
        if folded is not None:
            replace_by_conv(rewriter, op, folded, [] if relayout.result.has_more_than_one_use() else [relayout])


@dataclass
class FoldRelayoutIntoConvResult(RewritePattern):
    query: KernelQuery

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.RelayoutOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if isinstance(conv, tsr.ConvOp) and conv.result.has_one_use():
            folded = _folded(conv, conv.input, op.result.type, self.query)
            if folded is not None:
                replace_by_conv(rewriter, op, folded, [conv])


@dataclass(frozen=True)
class FoldRelayoutsIntoConvs(TargetPass):
    name = "fold-relayouts-into-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [FoldRelayoutIntoConvInput(self.query), FoldRelayoutIntoConvResult(self.query)]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)
