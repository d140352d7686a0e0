"""``fold-relayouts-into-convs``: a conv that tessera's kernel computes reads
its input in the layout it was produced in, instead of a relayout of it:

    %xr = tsr.relayout %x : (tensor<1x64x56x56xf32, #tsr.layout<nchw>>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %y = tsr.conv %xr, %w, %b {...} : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, ...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    // becomes (the relayout is dead once no other op reads it)
    %y = tsr.conv %x, %w, %b {...} : (tensor<1x64x56x56xf32, #tsr.layout<nchw>>, ...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>

tessera's conv kernel broadcasts one input scalar per (pixel, input channel),
so it reads NCHW/NCDHW input as well as channels-last; the relayout kernel's
read and write of the whole input go away. The conv kernel cost model
(``compiler/conv_kernel_model.py``, contiguous-input rules) says where that
beats the relayout plus the library call: 2-D convs with 16-64 input
channels per group, typically a network's first conv after an NCHW input.
Elsewhere (a channel step jumps a whole plane of the input) the relayout
stays. x86 fusion pipeline, before the epilogue fusions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr


class FoldRelayoutIntoConv(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.ConvOp, rewriter: PatternRewriter) -> None:
        from tessera.compiler.codegen.conv.host import wants_tessera

        relayout = op.input.owner
        if not isinstance(relayout, tsr.RelayoutOp):
            return
        folded = tsr.ConvOp.with_epilogue(relayout.input, op.weight, op.bias, op.residual_input, op.result.type,
                                          op.properties)
        if not wants_tessera(folded):
            folded.drop_all_references()
            return
        folded.result.name_hint = op.result.name_hint
        rewriter.replace(op, folded)
        if not relayout.result.uses:
            rewriter.erase(relayout)


@dataclass(frozen=True)
class FoldRelayoutsIntoConvs(ModulePass):
    name = "fold-relayouts-into-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldRelayoutIntoConv()).rewrite_module(op)
