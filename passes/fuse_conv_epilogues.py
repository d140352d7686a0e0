"""``fuse-conv-epilogues``: an activation after a convolution becomes the
conv's ``activation``, applied by the library (a oneDNN post-op) or tessera's
conv kernel before the result is stored: the result is written once instead of
written, read and written again.

    %y = tsr.conv %x, %w, %b {...} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %r = tsr.relu %y : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    // becomes
    %r = tsr.conv %x, %w, %b {..., activation = "relu"} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>

ReLU6 arrives as a clamp, ``minimum(maximum(y, 0.0), 6.0)``, and becomes
``activation = "relu6"`` (oneDNN's ``hardtanh`` post-op, or the kernel's two
selects). Runs in the fusion step, after the layout passes and ``fuse-conv-residuals``
(the activation applies after the residual add). An activation commutes with
a relayout, so ``relu(relayout(conv))`` becomes ``relayout(conv {activation =
"relu"})``: the relayout stays a kernel of its own either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr

ACTIVATION_OPS: dict[type[Operation], str] = {tsr.ReluOp: "relu", tsr.SiluOp: "silu"}


def _scalar(v: SSAValue) -> float | None:
    op = v.owner
    return op.value.value.data if isinstance(op, tsr.ConstantOp) and isinstance(op.value, FloatAttr) else None


def _activation(op: Operation) -> tuple[str | None, SSAValue | None, Operation | None]:
    """``(activation, its input, the op between them)`` when ``op`` ends an activation:
    ``relu``/``silu``, or ReLU6 as ``minimum(maximum(x, 0), 6)`` (a clamp, as ATen
    decomposes ``F.relu6``; the ``maximum`` is the op between)."""
    name = ACTIVATION_OPS.get(type(op))
    if name is not None:
        return name, op.operands[0], None
    if isinstance(op, tsr.MinimumOp) and _scalar(op.operands[1]) == 6.0:
        low = op.operands[0].owner
        if isinstance(low, tsr.MaximumOp) and _scalar(low.operands[1]) == 0.0 and low.results[0].has_one_use():
            return "relu6", low.operands[0], low
    return None, None, None


def replace_by_conv(rewriter: PatternRewriter, op: Operation, fused: tsr.ConvOp, dead: list[Operation]) -> None:
    """``op`` replaced by ``fused`` (relayouted to ``op``'s type where it differs); ``dead`` erased."""
    new: list[Operation] = [fused]
    if fused.result.type != op.results[0].type:
        new.append(tsr.RelayoutOp.create(operands=[fused.result], result_types=[op.results[0].type]))
    new[-1].results[0].name_hint = op.results[0].name_hint
    rewriter.replace(op, new, [new[-1].results[0]])
    for d in dead:
        rewriter.erase(d)


class FuseConvActivation(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        name, x, clamp = _activation(op)
        if name is None:
            return
        between = x.owner
        relayout = between if isinstance(between, tsr.RelayoutOp) and between.result.has_one_use() else None
        y = relayout.input if relayout is not None else x
        conv = y.owner
        if (not isinstance(conv, tsr.ConvOp) or conv.activation is not None or not conv.result.has_one_use()
                or op.results[0].type.get_element_type() != conv.result.type.get_element_type()
                or op.results[0].type.get_shape() != conv.result.type.get_shape()):
            return
        fused = tsr.ConvOp.with_epilogue(conv.input, conv.weight, conv.bias, conv.residual_input, conv.result.type,
                                 {**conv.properties, "activation": StringAttr(name)})
        replace_by_conv(rewriter, op, fused, [d for d in (clamp, relayout, conv) if d is not None])


@dataclass(frozen=True)
class FuseConvEpilogues(ModulePass):
    name = "fuse-conv-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseConvActivation()).rewrite_module(op)
