"""``trim-padded-taps``: a convolution's kernel taps that read only zero padding,
at every output point, are dropped; a zero ``tsr.pad`` in front of the conv
folds into the conv's own padding where what is left is the same on both sides.

    %z = tsr.constant 0.000000e+00 : f32
    %p = tsr.pad %x, %z {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}
         : (tensor<1x96x1x32x32xf32>, f32) -> tensor<1x96x3x34x34xf32>
    %y = tsr.conv %p, %w, %b {padding = array<i64: 0, 0, 0>, ...}
         : (tensor<1x96x3x34x34xf32>, tensor<96x96x3x3x3xf32>, tensor<96xf32>) -> tensor<1x96x1x32x32xf32>
    // becomes (the two leading time taps read only the causal pad)
    %w2 = tsr.slice %w {dim = 2 : i64, start = 2 : i64, end = 3 : i64, step = 1 : i64}
          : (tensor<96x96x3x3x3xf32>) -> tensor<96x96x1x3x3xf32>
    %y = tsr.conv %x, %w2, %b {padding = array<i64: 0, 1, 1>, ...}
         : (tensor<1x96x1x32x32xf32>, tensor<96x96x1x3x3xf32>, tensor<96xf32>) -> tensor<1x96x1x32x32xf32>

Static sizes happen where a model meets them: a causal video VAE's convs on its
first frame (WAN's decoder on one latent frame: every 3x3x3 conv is a 1x3x3
one, a third of the multiply-adds), a video network's last stage at one frame
(r3d_18's 3x3x3 convs at 1x7x7, time padded by 1), a 3x3 conv of a 1x1 image.
A dropped tap multiplied only zeros, so the result is eager's up to the order
of the remaining sums. Where the new padding differs between the sides (WAN's
causal pad of 2 before 2 frames: taps 1 and 2 live, 1 frame of padding left
before them), a zero pad stays in front of the conv, cropping where a side went negative; a conv left as it was
is not rewritten. Applies to convs of static spatial sizes; a conv whose every
tap reads only padding (its output is its bias) is left alone. A dropped tap's
weights are never read: a NaN or infinity there, which eager multiplies by the
explicit pad's zeros, does not reach the output (as where a library conv skips
its own padding); a NaN in the input reaches it as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr
from tessera.dialects.conv_sizes import conv_output_size
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.shapes import elem_of, i64_array, ints, is_static, shape_of, with_shape


def live_taps(size: int, low: int, out: int, kernel: int, stride: int, dilation: int) -> tuple[int, int] | None:
    """The first and last taps of a conv dim that read real data at some output point,
    or None: input ``size`` elements after ``low`` of zero padding, ``out`` outputs.

        >>> live_taps(1, 1, 1, 3, 1, 1)    # one frame, padded by 1: the middle tap
        (1, 1)
        >>> live_taps(1, 2, 1, 3, 1, 1)    # a causal pad of 2: the last tap
        (2, 2)
        >>> live_taps(2, 2, 2, 3, 1, 1)    # two frames: the first tap reads the pad only
        (1, 2)
        >>> live_taps(3, 2, 3, 3, 1, 1)    # three: every tap
        (0, 2)
    """
    def live(t: int) -> bool:
        first = max(0, -((t * dilation - low) // stride))  # the first output reading at or after the pad
        return first < out and first * stride + t * dilation - low < size

    taps = [t for t in range(kernel) if live(t)]
    return (taps[0], taps[-1]) if taps else None


def _zero_pad(v: SSAValue) -> tsr.PadOp | None:
    """``v``'s producer when it is a pad by a constant zero of the spatial dims only, by non-negative
    amounts, that keeps its input's layout (a pad that also relayouts, ``fuse-relayouts``, stays)."""
    pad = v.owner
    if (not isinstance(pad, tsr.PadOp) or not isinstance(const := pad.value.owner, tsr.ConstantOp)
            or layout_of(pad.input.type) != layout_of(pad.result.type)):
        return None
    value = const.value
    if not isinstance(value, (FloatAttr, IntegerAttr)) or value.value.data != 0:
        return None
    low, high = ints(pad.low), ints(pad.high)
    return pad if low[:2] == high[:2] == (0, 0) and min(low + high) >= 0 else None


@dataclass(frozen=True)
class _Dim:
    """One spatial dim of the rewritten conv: its taps ``[first, last]``, the zero padding
    around the real input (``high`` the least that keeps the output's size) and whether
    the conv's own (symmetric) padding of ``low`` gives that output size."""

    first: int
    last: int
    low: int
    high: int
    symmetric: bool


class TrimPaddedTapsPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, conv: tsr.ConvOp, rewriter: PatternRewriter) -> None:
        pad = _zero_pad(conv.input)
        x = pad.input if pad is not None else conv.input
        xs, ws, ys = shape_of(x.type), shape_of(conv.weight.type), shape_of(conv.result.type)
        if not (is_static(xs[2:]) and is_static(ys[2:])):
            return
        lows = ints(pad.low)[2:] if pad is not None else (0,) * len(ws[2:])  # the high side follows from the output
        dims = []
        for n, k, out, p, s, d, pl in zip(xs[2:], ws[2:], ys[2:], ints(conv.padding), ints(conv.stride),
                                         ints(conv.dilation), lows):
            taps = live_taps(n, p + pl, out, k, s, d)
            if taps is None:
                return
            first, last = taps
            low, kept = p + pl - first * d, last - first + 1
            high = (out - 1) * s + d * (kept - 1) + 1 - n - low
            dims.append(_Dim(first, last, low, high, 0 <= high <= low and conv_output_size(n, kept, s, low, d) == out))
        trimmed = any(dim.first > 0 or dim.last < k - 1 for dim, k in zip(dims, ws[2:]))
        symmetric = all(dim.symmetric for dim in dims)
        if (not trimmed and not (pad is not None and symmetric)
                or not symmetric and pad is None and not isinstance(elem_of(x.type), AnyFloat)):
            return
        new: list[Operation] = []
        weight = conv.weight
        for axis, (dim, k) in enumerate(zip(dims, ws[2:]), start=2):
            if dim.first > 0 or dim.last < k - 1:
                shape = list(shape_of(weight.type))
                shape[axis] = dim.last - dim.first + 1
                sliced = tsr.SliceOp.create(operands=[weight], result_types=[with_shape(weight.type, shape)], properties={
                    "dim": IntegerAttr(axis, i64), "start": IntegerAttr(dim.first, i64),
                    "end": IntegerAttr(dim.last + 1, i64), "step": IntegerAttr(1, i64)})
                sliced.result.name_hint = "taps"
                new.append(sliced)
                weight = sliced.result
        if not symmetric:
            zero = pad.value if pad is not None else None
            if zero is None:
                new.append(const := tsr.ConstantOp(FloatAttr(0.0, elem_of(x.type))))
                zero = const.result
            sizes = [n + dim.low + dim.high for n, dim in zip(xs[2:], dims)]
            padded = tsr.PadOp.create(operands=[x, zero], result_types=[with_shape(x.type, [*xs[:2], *sizes])],
                                      properties={"low": i64_array([0, 0, *(dim.low for dim in dims)]),
                                                  "high": i64_array([0, 0, *(dim.high for dim in dims)])})
            new.append(padded)
            x = padded.result
        padding = i64_array([dim.low if symmetric else 0 for dim in dims])
        trimmed_conv = tsr.ConvOp.with_epilogue(x, weight, conv.bias, conv.residual_input, conv.result.type,
                                                {**conv.properties, "padding": padding})
        trimmed_conv.result.name_hint = conv.result.name_hint
        rewriter.replace(conv, [*new, trimmed_conv], [trimmed_conv.result])


@dataclass(frozen=True)
class TrimPaddedTaps(ModulePass):
    name = "trim-padded-taps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(TrimPaddedTapsPattern(), apply_recursively=False).rewrite_module(op)
