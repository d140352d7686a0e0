"""``fuse-conv-epilogues``: an activation that is a convolution's only user
becomes the conv's ``activation``, applied by the library (a oneDNN post-op)
or tessera's conv kernel before the result is stored: the result is written
once instead of written, read and written again.

    %y = tsr.conv %x, %w, %b {...} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %r = tsr.relu %y : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    // becomes
    %r = tsr.conv %x, %w, %b {..., activation = "relu"} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>

Runs in the fusion step, after the layout passes: the activation must keep
the conv's type (layout included), else the relayout it carries stays a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr

ACTIVATION_OPS: dict[type[Operation], str] = {tsr.ReluOp: "relu", tsr.SiluOp: "silu"}


class FuseConvActivation(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        name = ACTIVATION_OPS.get(type(op))
        conv = op.operands[0].owner if name else None
        if (not isinstance(conv, tsr.ConvOp) or conv.activation is not None or not conv.result.has_one_use()
                or op.results[0].type != conv.result.type):
            return
        fused = tsr.ConvOp.create(operands=list(conv.operands), result_types=[conv.result.type],
                                  properties={**conv.properties, "activation": StringAttr(name)})
        fused.result.name_hint = op.results[0].name_hint
        rewriter.replace(op, [fused], [fused.result])
        rewriter.erase(conv)


@dataclass(frozen=True)
class FuseConvEpilogues(ModulePass):
    name = "fuse-conv-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseConvActivation()).rewrite_module(op)
