"""Float conversions without library calls.

LLVM lowers ``fptrunc float to bfloat`` (and f16 conversions on CPUs without
F16C) to calls of ``__truncsfbf2``/``__truncsfhf2``/``__extendhfsf2``, which a
JIT-loaded object cannot count on and which stop vectorization. When a target
lacks the instructions, the emitter writes the conversions as integer code
(round to nearest even, NaN stays NaN):

    %b = bitcast float %x to i32
    %r = add i32 %b, (0x7fff + ((%b >> 16) & 1))   ; then >> 16, trunc to i16
    %y = bitcast i16 %r to bfloat

Conversions between f64 and 16-bit floats go through f32.
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.types import BF16, F16, F32, F64, I16, I32


def _c(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def convert_float(b: ir.IRBuilder, x: ir.Value, to: ir.Type, native_f16: bool, native_bf16: bool) -> ir.Value:
    """``x`` (a float of any width) as the float type ``to``."""
    src = x.type
    if src == to:
        return x
    if src in (F16, BF16) and to in (F16, BF16, F64):
        return convert_float(b, convert_float(b, x, F32, native_f16, native_bf16), to, native_f16, native_bf16)
    if src == F64 and to in (F16, BF16):
        return convert_float(b, b.fptrunc(x, F32), to, native_f16, native_bf16)
    if src == F32 and to == BF16:
        return b.fptrunc(x, BF16) if native_bf16 else f32_to_bf16(b, x)
    if src == BF16 and to == F32:
        return bf16_to_f32(b, x)
    if src == F32 and to == F16:
        return b.fptrunc(x, F16) if native_f16 else f32_to_f16(b, x)
    if src == F16 and to == F32:
        return b.fpext(x, F32) if native_f16 else f16_to_f32(b, x)
    widths = {F32: 32, F64: 64}
    return b.fpext(x, to) if widths[to] > widths[src] else b.fptrunc(x, to)


def bf16_to_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    bits = b.zext(b.bitcast(x, I16), I32)
    return b.bitcast(b.shl(bits, _c(16)), F32)


def f32_to_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    bits = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(bits, _c(16)), _c(1))
    rounded = b.lshr(b.add(bits, b.add(lsb, _c(0x7FFF))), _c(16))
    quiet = b.or_(b.lshr(bits, _c(16)), _c(0x40))
    is_nan = b.fcmp_unordered("uno", x, x)
    return b.bitcast(b.trunc(b.select(is_nan, quiet, rounded), I16), BF16)


def f32_to_f16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round to nearest even (after F. Giesen's ``float_to_half_fast3_rtne``)."""
    bits = b.bitcast(x, I32)
    sign = b.and_(bits, _c(0x80000000))
    mag = b.xor(bits, sign)
    # overflow/inf -> inf, NaN -> quiet NaN
    big = b.select(b.icmp_unsigned(">", mag, _c(0x7F800000)), _c(0x7E00), _c(0x7C00))
    # results below the smallest normal half: let the FPU round by adding 0.5
    denorm_magic = 0x3F000000
    small = b.sub(b.bitcast(b.fadd(b.bitcast(mag, F32), b.bitcast(_c(denorm_magic), F32)), I32), _c(denorm_magic))
    # normal range: rebias the exponent and round the 13 dropped bits to even
    odd = b.and_(b.lshr(mag, _c(13)), _c(1))
    normal = b.lshr(b.add(b.add(mag, _c(((15 - 127) << 23) + 0xFFF)), odd), _c(13))
    out = b.select(b.icmp_unsigned("<", mag, _c(113 << 23)), small, normal)
    out = b.select(b.icmp_unsigned(">=", mag, _c(0x47800000)), big, out)
    out = b.or_(out, b.lshr(sign, _c(16)))
    return b.bitcast(b.trunc(out, I16), F16)


def f16_to_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Exact (after F. Giesen's ``half_to_float``)."""
    h = b.zext(b.bitcast(x, I16), I32)
    shifted_exp = 0x7C00 << 13
    o = b.shl(b.and_(h, _c(0x7FFF)), _c(13))
    exp = b.and_(o, _c(shifted_exp))
    o = b.add(o, _c((127 - 15) << 23))
    inf_nan = b.add(o, _c((128 - 16) << 23))
    magic = b.bitcast(_c(113 << 23), F32)
    sub = b.bitcast(b.fsub(b.bitcast(b.add(o, _c(1 << 23)), F32), magic), I32)
    o = b.select(b.icmp_unsigned("==", exp, _c(shifted_exp)), inf_nan, o)
    o = b.select(b.icmp_unsigned("==", exp, _c(0)), sub, o)
    o = b.or_(o, b.shl(b.and_(h, _c(0x8000)), _c(16)))
    return b.bitcast(o, F32)
