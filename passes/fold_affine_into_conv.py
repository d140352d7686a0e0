"""``fold-affine-into-conv``: a per-output-channel scale or shift of a
convolution's result, computed from parameters alone, folds into the conv's
weight and bias. An eval-mode BatchNorm after a conv (``(y - mean) * invstd *
gamma + beta`` once decomposed) disappears this way, as under Inductor's
freezing, but without freezing: the folded weight is computed once per
parameter version by the host program (``compiler/weight_preparation.py``).

    %y = tsr.conv %x, %w {...} : (...) -> tensor<1x64x56x56xf32>
    %s = tsr.mul %y, %scale : (tensor<1x64x56x56xf32>, tensor<64x1x1xf32>) -> tensor<1x64x56x56xf32>
    // becomes
    %sw = tsr.reshape %scale : (tensor<64x1x1xf32>) -> tensor<64x1x1x1xf32>
    %w2 = tsr.mul %w, %sw : (tensor<64x64x3x3xf32>, tensor<64x1x1x1xf32>) -> tensor<64x64x3x3xf32>
    %s  = tsr.conv %x, %w2 {...} : (...) -> tensor<1x64x56x56xf32>

``y * s`` scales the weight and the bias; ``y + t`` and ``y - t`` shift the
bias (a new one when the conv had none). The conv's result must have no other
use, the other operand must broadcast along the output channels only and be
computed from function arguments and constants by elementwise and shape ops
(no activation reaches it), and the dtype must be f32: a bf16/f16 weight
rounded after scaling would drift further from eager than tolerances allow.
Exact up to rounding (eager multiplies after summing, the folded conv before).

With ``per_call=true`` (the default mode's pipeline: the folded weight is computed
and packed again on every call) only a conv whose weight has at most as many
elements as its output folds: there one pass over the weight buys the pass over
the output the affine's kernel made, and the conv's activation becomes its
epilogue (EfficientNet's and MobileNet's convs); a weight-heavy conv (a deep
ResNet layer) keeps its BatchNorm as a kernel after it. At dynamic sizes a
weight folds per call up to ``target_models.DYNAMIC_WEIGHT_LIMIT`` elements.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr
from tessera.dialects.tsr.op_classes import reads_only_arguments
from tessera.dialects.tsr.shapes import elem_of, is_static, numel, shape_of
from tessera.passes.target_models import DYNAMIC_WEIGHT_LIMIT

_FOLDABLE = (tsr.MulOp, tsr.AddOp, tsr.SubOp)


def _outweighs(conv: tsr.ConvOp) -> bool:
    """The conv's weight has more elements than its output (folding it per call would
    cost more than the affine it saves); at dynamic sizes, more than ``DYNAMIC_WEIGHT_LIMIT``."""
    out, weight = shape_of(conv.result.type), numel(shape_of(conv.weight.type))
    return weight > numel(out) if is_static(out) else weight > DYNAMIC_WEIGHT_LIMIT


def _per_channel(v: SSAValue, out_shape: tuple[int, ...]) -> bool:
    """``v`` broadcasts against ``out_shape`` ([N, C, ...]) along the channel dim only (or is one value)."""
    shape = shape_of(v.type)
    if len(shape) > len(out_shape):
        return False
    aligned = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return all(n == 1 for d, n in enumerate(aligned) if d != 1) and aligned[1] in (1, out_shape[1])


class FoldAffineIntoConvPattern(RewritePattern):
    def __init__(self, per_call: bool = False):
        self.per_call = per_call

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _FOLDABLE):
            return
        lhs, rhs = op.operands
        conv, other = (lhs.owner, rhs) if isinstance(lhs.owner, tsr.ConvOp) else (rhs.owner, lhs)
        if (not isinstance(conv, tsr.ConvOp) or conv.activation is not None or conv.residual is not None
                or not isinstance(other.type, TensorType) or not conv.result.has_one_use()
                or (isinstance(op, tsr.SubOp) and conv.result is not lhs) or other is conv.result
                or op.results[0].type != conv.result.type or elem_of(conv.result.type) != f32
                or not _per_channel(other, shape_of(conv.result.type)) or not reads_only_arguments(other)
                or self.per_call and _outweighs(conv)):
            return
        cout = shape_of(conv.weight.type)[0]
        new: list[Operation] = []

        def emit(o: Operation) -> SSAValue:
            new.append(o)
            return o.results[0]

        def channel_vector(shape: tuple[int, ...]) -> SSAValue:
            """``other`` as a tensor of ``shape`` (``cout`` values, or one broadcast to them)."""
            t = TensorType(elem_of(conv.result.type), list(shape))
            if numel(shape_of(other.type)) == cout:
                return emit(tsr.ReshapeOp.create(operands=[other], result_types=[t]))
            one = emit(tsr.ReshapeOp.create(operands=[other], result_types=[TensorType(elem_of(t), [1] * len(shape))]))
            return emit(tsr.ExpandOp.create(operands=[one], result_types=[t]))

        weight, bias = conv.weight, conv.bias
        if isinstance(op, tsr.MulOp):
            wshape = shape_of(weight.type)
            weight = emit(tsr.MulOp.create(operands=[weight, channel_vector((cout,) + (1,) * (len(wshape) - 1))],
                                           result_types=[weight.type]))
            if bias is not None:
                bias = emit(tsr.MulOp.create(operands=[bias, channel_vector((cout,))], result_types=[bias.type]))
        else:
            shift = channel_vector((cout,))
            btype = TensorType(elem_of(conv.result.type), [cout])
            if bias is None:
                bias = shift if isinstance(op, tsr.AddOp) else emit(tsr.NegOp.create(operands=[shift], result_types=[btype]))
            else:
                cls = tsr.AddOp if isinstance(op, tsr.AddOp) else tsr.SubOp
                bias = emit(cls.create(operands=[bias, shift], result_types=[bias.type]))
        folded = tsr.ConvOp.with_epilogue(conv.input, weight, bias, None, op.results[0].type, conv.properties)
        folded.result.name_hint = op.results[0].name_hint
        rewriter.replace(op, [*new, folded], [folded.result])
        rewriter.erase(conv)


@dataclass(frozen=True)
class FoldAffineIntoConv(ModulePass):
    name = "fold-affine-into-conv"

    per_call: bool = False
    """Fold only where the weight is no larger than the output (weights prepared on every call)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldAffineIntoConvPattern(self.per_call)).rewrite_module(op)
