"""The epilogue, fused into the tile's stores: the output is written once.

    out[p, c] = act(acc[p, c] + bias[c] + residual[p, c])       (each term optional)

Bias and residual are added to the accumulator vectors before the store (in
torch's order: ``conv(x, w, bias) + residual``); ReLU and ReLU6 are vector
selects (NaN stays NaN, like ``torch.relu`` and ``F.relu6``), and SiLU is
computed on the accumulator vectors too (``expand_math.silu``: 20 vector ops,
1.63 ulp at most; EfficientNet's 16 -> 96 1x1 conv at 112x112, AVX2: SiLU 1.27 ->
0.47 ms of the launch, BENCHMARKS.md session 24). GELU uses the inline f32
expansions of ``expand_math`` (``erf``, ``tanh``) in a scalar loop
over the freshly stored tile, which LLVM's loop vectorizer widens to the
target's vectors (no libm call):

    silu(x)      = x / (1 + exp(-x))            (the exp of expand_math.silu: one 2^n factor, no NaN select)
    gelu(x)      = 0.5 x (1 + erf(x / sqrt 2))
    gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))

A tile's last channel vector past the valid channels is stored with a mask.
A contiguous (NCHW) output is written a channel's row of pixels at a time, the
tile transposed in registers, the residual and activation applied there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from llvmlite import ir

from tessera.compiler.codegen import expand_math
from tessera.compiler.codegen.irbuild import F32, counted_loop, gep, i64, load_vec, store_vec, transpose
from tessera.compiler.targets.x86.conv.spec import ConvSpec


def clamp(b: ir.IRBuilder, x: ir.Value, lo: ir.Value, hi: ir.Value | None) -> ir.Value:
    """``x`` clamped to ``[lo, hi]`` (no upper bound when ``hi`` is None); NaN stays NaN."""
    x = b.select(b.fcmp_ordered("<", x, lo), lo, x)
    return x if hi is None else b.select(b.fcmp_ordered(">", x, hi), hi, x)


def activate(b: ir.IRBuilder, x: ir.Value, activation: str) -> ir.Value:
    """``activation(x)`` of one f32 (see the module docstring), or of each lane of a vector."""

    def c(v: float) -> ir.Constant:
        return expand_math.like(x, v)

    if activation in ("relu", "relu6"):
        return clamp(b, x, c(0.0), c(6.0) if activation == "relu6" else None)
    if activation == "silu":
        return expand_math.silu(b, x)
    if activation == "gelu":
        inner = expand_math.erf(b, b.fmul(x, c(1 / math.sqrt(2.0))))
    elif activation == "gelu_tanh":
        cube = b.fmul(b.fmul(x, x), x)
        inner = expand_math.tanh(b, b.fmul(c(math.sqrt(2.0 / math.pi)), b.fadd(x, b.fmul(c(0.044715), cube))))
    else:
        return x
    return b.fmul(b.fmul(x, c(0.5)), b.fadd(c(1.0), inner))


def store_tile(b: ir.IRBuilder, spec: ConvSpec, accs: Sequence[Sequence[ir.Value]], out: ir.Value,
               bias: ir.Value, res: ir.Value, nvalid: int) -> None:
    """Stores ``accs[p][v]`` (pixel ``p``, channel vector ``v``) at ``out`` (pixel 0,
    the tile's first channel; pixels ``C_out`` floats apart) through the epilogue;
    ``res`` points at the same element of the residual, ``bias`` at the tile's
    first channel's bias."""
    if spec.output_layout != "channels_last":
        _store_transposed(b, spec, accs, out, bias, res, nvalid)
        return
    lanes = accs[0][0].type.count
    pixel_bytes = 4 * spec.out_channels

    def valid(v: int) -> int:
        return min(lanes, nvalid - v * lanes)

    biases = [load_vec(b, gep(b, bias, 4 * v * lanes), lanes, valid(v)) for v in range(len(accs[0]))] if spec.bias else None
    for p, row in enumerate(accs):
        for v, acc in enumerate(row):
            off = p * pixel_bytes + 4 * v * lanes
            value = acc
            if biases is not None:
                value = b.fadd(value, biases[v])
            if spec.residual:
                value = b.fadd(value, load_vec(b, gep(b, res, off), lanes, valid(v)))
            if spec.activation in ("relu", "relu6"):
                six = ir.Constant(value.type, [6.0] * lanes) if spec.activation == "relu6" else None
                value = clamp(b, value, ir.Constant(value.type, None), six)
            elif spec.activation == "silu":
                value = activate(b, value, "silu")
            store_vec(b, value, gep(b, out, off), valid(v))
    if spec.activation in ("gelu", "gelu_tanh"):
        _activation_loop(b, spec, out, len(accs), nvalid, pixel_bytes)


def _store_transposed(b: ir.IRBuilder, spec: ConvSpec, accs: Sequence[Sequence[ir.Value]], out: ir.Value,
                      bias: ir.Value, res: ir.Value, nvalid: int) -> None:
    """``store_tile`` into a contiguous (NCHW/NCDHW) output: each channel vector of up to
    ``lanes`` pixels (bias added) transposed in registers (``irbuild.transpose``) into one
    vector of pixels per channel, the residual (same layout) added, the activation applied,
    and stored (masked past the tile's pixels) into the channel's row (``out``/``res``
    point at pixel 0 of the tile's first channel). A scratch tile read back a float at a
    time, as before, ran 1.6-2.7x the channels-last store's time on 32x32 to 64x64 planes
    (a 32 -> 32 3x3 conv at 64x64, batch 8: 6.45 against 3.44 ms; session 35)."""
    lanes, width, nvec = accs[0][0].type.count, len(accs), len(accs[0])
    plane = 4 * spec.out_channel_stride
    for v in range(nvec):
        bias_v = load_vec(b, gep(b, bias, 4 * v * lanes), lanes, min(lanes, nvalid - v * lanes)) if spec.bias else None
        for p0 in range(0, width, lanes):
            pixels = min(lanes, width - p0)
            rows = [b.fadd(accs[p][v], bias_v) if bias_v is not None else accs[p][v] for p in range(p0, p0 + pixels)]
            rows += [ir.Constant(rows[0].type, None)] * (lanes - pixels)
            for t, value in enumerate(transpose(b, rows)[:max(0, min(lanes, nvalid - v * lanes))]):
                at = (v * lanes + t) * plane + 4 * p0
                if spec.residual:
                    value = b.fadd(value, load_vec(b, gep(b, res, at), lanes, pixels))
                store_vec(b, activate(b, value, spec.activation), gep(b, out, at), pixels)



def load_tile(b: ir.IRBuilder, spec: ConvSpec, out: ir.Value, pixels: int, nvec: int, lanes: int,
              nvalid: int) -> list[ir.Value]:
    """The partial sums a previous input-channel block left in ``out`` (flat, pixel-major)."""
    return [load_vec(b, gep(b, out, p * 4 * spec.out_channels + 4 * v * lanes), lanes, min(lanes, nvalid - v * lanes))
            for p in range(pixels) for v in range(nvec)]


def store_raw(b: ir.IRBuilder, spec: ConvSpec, accs: Sequence[Sequence[ir.Value]], out: ir.Value, nvalid: int) -> None:
    """Partial sums into ``out``, no epilogue (an input-channel block that is not the last)."""
    lanes = accs[0][0].type.count
    for p, row in enumerate(accs):
        for v, acc in enumerate(row):
            store_vec(b, acc, gep(b, out, p * 4 * spec.out_channels + 4 * v * lanes), min(lanes, nvalid - v * lanes))


def _activation_loop(b: ir.IRBuilder, spec: ConvSpec, out: ir.Value, pixels: int, nvalid: int, pixel_bytes: int) -> None:
    def pixel(b: ir.IRBuilder, p: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        row = gep(b, out, b.mul(p, i64(pixel_bytes)))

        def channel(b: ir.IRBuilder, c: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            ptr = gep(b, row, b.mul(c, i64(4)))
            b.store(activate(b, b.load(ptr, typ=F32, align=4), spec.activation), ptr, align=4)
            return []

        counted_loop(b, nvalid, [], channel, "act.c")
        return []

    counted_loop(b, pixels, [], pixel, "act.p")
