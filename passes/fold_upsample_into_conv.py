"""``fold-upsample-into-conv``: a convolution of a nearest-upsampled tensor
becomes a polyphase convolution of the tensor before upsampling
(``dialects/tsr/ops_polyphase.py``), where that needs fewer FLOPs.

    %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x64x32x32xf32>) -> tensor<1x64x64x64xf32>
    %y = tsr.conv %u, %w, %b {padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, ...}
    // becomes
    %xp = tsr.pad %x, %zero {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>}
    %wp = tsr.polyphase_weight %w {scales = array<i64: 2, 2>, padding = array<i64: 1, 1>}
    %bp = tsr.concat %b, %b, %b, %b {dim = 0 : i64}
    %c  = tsr.conv %xp, %wp, %bp {padding = array<i64: 0, 0>, ...} : (...) -> tensor<1x256x33x33xf32>
    %y  = tsr.polyphase_interleave %c {scales = array<i64: 2, 2>, shifts = array<i64: 0, 1, 0, 1>}

Dynamic spatial sizes fold too: the phases' pads do not depend on the size
(``PolyphaseDim.pads``), the polyphase conv's output is ``n + shift`` and the
cost model takes a dynamic dim's ratio as the large-size limit (``taps / kernel``).

Exact up to the order of the f32 sums (taps that read the same input element
are added in the weight first). Applies to stride-1, undilated, ungrouped
convs whose padding keeps the upsampled size (``2*padding == kernel - 1``),
when the polyphase conv does at most ``MAX_FLOP_RATIO`` of the original's
multiply-adds: a 3x3 kernel after a 2x upsample does 0.47x in 2-D and with
a 3x3x3 kernel and (1, 2, 2) 0.48x; a 1x1 kernel gains nothing and stays.
The weight and bias transforms read only parameters: the host program
computes them once per parameter version (``compiler/host_program.py``).
With a ``target`` option (the backend's pipelines pass theirs), a conv the
target computes faster unfolded stays (``TargetModels.keeps_upsampled_conv``:
on x86 one that Winograd takes, from 128 channels in and out in 2-D, 64 in
3-D; ``conv_choice.winograd_over_polyphase``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tessera.dialects import tsr
from tessera.dialects.polyphase import PolyphaseDim
from tessera.dialects.tsr.shapes import DYNAMIC, dim_of, elem_of, i64_array, ints, numel, shape_of, with_shape

from .target_models import KernelQuery
from .target_pass import TargetPass

MAX_FLOP_RATIO = 0.8


def _plan(conv: tsr.ConvOp, up: tsr.UpsampleOp, query: KernelQuery | None) -> list[PolyphaseDim] | None:
    repeats = up.repeats()
    if repeats is None or all(r == 1 for r in repeats) or conv.groups.value.data != 1:
        return None
    if any(s != 1 for s in ints(conv.stride)) or any(d != 1 for d in ints(conv.dilation)):
        return None
    kernel = shape_of(conv.weight.type)[2:]
    if not all(PolyphaseDim.supports(s, k, p) for s, k, p in zip(repeats, kernel, ints(conv.padding))):
        return None
    dims = [PolyphaseDim(s, k, p) for s, k, p in zip(repeats, kernel, ints(conv.padding))]
    ratio = numel([_flop_ratio(d, n) for d, n in zip(dims, shape_of(up.input.type)[2:])])
    return dims if ratio <= MAX_FLOP_RATIO and not (query and query.keeps_upsampled_conv(conv)) else None


def _flop_ratio(d: PolyphaseDim, n: int) -> float:
    """The polyphase conv's multiply-adds over the original's along one dim of
    input size ``n``: ``scale * conv_size(n) * taps`` against ``scale * n * kernel``
    (a dynamic ``n``: its large-size limit)."""
    return d.taps / d.kernel if n == DYNAMIC else d.conv_size(n) * d.taps / (n * d.kernel)


@dataclass
class FoldUpsampleIntoConvPattern(RewritePattern):
    query: KernelQuery | None = None
    """The target asked whether it computes the conv of the upsampled tensor faster as it is
    (None: folded wherever the polyphase conv does fewer multiply-adds)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: tsr.ConvOp, rewriter: PatternRewriter) -> None:
        up = conv.input.owner
        if (not isinstance(up, tsr.UpsampleOp) or conv.residual is not None
                or (dims := _plan(conv, up, self.query)) is None):
            return
        x, w, elem = up.input, conv.weight, elem_of(conv.input.type)
        xs, ws = shape_of(x.type), shape_of(w.type)
        phases = numel([d.scale for d in dims])
        new: list[Operation] = []

        zero = tsr.ConstantOp(FloatAttr(0.0, elem))
        pads = [d.pads for d in dims]
        padded_sizes = (dim_of(lambda n, p=p: n + sum(p), n) for n, p in zip(xs[2:], pads))
        padded = tsr.PadOp.create(
            operands=[x, zero.result], result_types=[with_shape(x.type, [*xs[:2], *padded_sizes])],
            properties={"low": i64_array([0, 0, *(lo for lo, _ in pads)]), "high": i64_array([0, 0, *(hi for _, hi in pads)])})
        scales = i64_array(d.scale for d in dims)
        weight = tsr.PolyphaseWeightOp.create(
            operands=[w], result_types=[with_shape(w.type, [phases * ws[0], ws[1], *(d.taps for d in dims)])],
            properties={"scales": scales, "padding": conv.padding})
        new += [zero, padded, weight]
        bias = None
        if conv.bias is not None:
            bias = tsr.ConcatOp.create(operands=[conv.bias] * phases,
                                       result_types=[with_shape(conv.bias.type, [phases * ws[0]])],
                                       properties={"dim": IntegerAttr(0, i64)})
            new.append(bias)
        out = shape_of(conv.result.type)
        poly = tsr.ConvOp.with_epilogue(
            padded.result, weight.result, bias.results[0] if bias is not None else None, None,
            with_shape(conv.result.type, [out[0], phases * ws[0], *(dim_of(d.conv_size, n) for d, n in zip(dims, xs[2:]))]),
            {**conv.properties, "padding": i64_array([0] * len(dims))})
        interleave = tsr.PolyphaseInterleaveOp.create(
            operands=[poly.result], result_types=[conv.result.type],
            properties={"scales": scales, "shifts": i64_array(s for d in dims for s in d.shifts)})
        new += [poly, interleave]
        _name(padded.result, x, "polyphase_in")
        _name(weight.result, w, "polyphase_w")
        _name(poly.result, conv.result, "polyphase")
        if conv.bias is not None:
            _name(bias.results[0], conv.bias, "polyphase_b")
        rewriter.replace(conv, new, [interleave.result])
        if not up.result.uses:
            rewriter.erase(up)


def _name(v: SSAValue, like: SSAValue, fallback: str) -> None:
    v.name_hint = f"{like.name_hint}_{fallback}" if like.name_hint else fallback


@dataclass(frozen=True)
class FoldUpsampleIntoConv(TargetPass):
    """``fold-upsample-into-conv{target=x86 freezing=true}``: with a target, a conv that the
    target computes faster unfolded (``TargetModels.keeps_upsampled_conv``; x86: Winograd
    from 128 channels in and out) stays; without one, every conv the fold saves
    multiply-adds on is folded."""

    name = "fold-upsample-into-conv"

    target: str = ""

    def __post_init__(self) -> None:
        if self.target:
            super().__post_init__()  # a ValueError naming the known targets

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        query = self.query if self.target else None
        PatternRewriteWalker(FoldUpsampleIntoConvPattern(query), apply_recursively=False).rewrite_module(op)
