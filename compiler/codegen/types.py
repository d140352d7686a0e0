"""MLIR element types as LLVM types (llvmlite.ir), plus the ``bfloat`` type
llvmlite lacks.

    f32 -> float    f16 -> half    bf16 -> bfloat    index -> i64    ui8 -> i8
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from llvmlite import ir
from llvmlite.ir.types import _BaseFloatType

from tessera.compiler.codegen.errors import CodegenError

if TYPE_CHECKING:
    from xdsl.ir import Attribute


class BFloatType(_BaseFloatType):
    """LLVM's ``bfloat``; constants print as ``0xRXXXX`` (RNE from f32)."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        return f"0xR{f32_to_bf16_bits(value):04X}"


BFloatType._create_instance()

I1, I8, I16, I32, I64 = (ir.IntType(w) for w in (1, 8, 16, 32, 64))
F16, BF16, F32, F64 = ir.HalfType(), BFloatType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()


def f32_to_bf16_bits(value: float) -> int:
    """Round-to-nearest-even of ``value`` (as f32) to bf16 bits; NaN stays quiet."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return ((bits >> 16) | 0x40) & 0xFFFF
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def llvm_type(t: Attribute) -> ir.Type:
    """The LLVM type of an MLIR scalar type (``index`` is 64-bit)."""
    from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IndexType, IntegerType

    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    match t:
        case Float32Type():
            return F32
        case Float16Type():
            return F16
        case BFloat16Type():
            return BF16
        case Float64Type():
            return F64
    raise CodegenError(f"type {t} has no LLVM counterpart in kernel IR")


def is_float(t: ir.Type) -> bool:
    return isinstance(t, _BaseFloatType)


def byte_size(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return {F16: 2, BF16: 2, F32: 4, F64: 8}[t]
