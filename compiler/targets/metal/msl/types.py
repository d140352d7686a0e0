"""MLIR scalar types as Metal Shading Language types, and typed literals.

    f32 -> float    f16 -> half    bf16 -> bfloat    i1 -> bool (stored as uchar)
    i8 -> char      i16 -> short   i32 -> int        i64 -> long
    index -> int (or long, see :func:`index_type`)    f64 -> CodegenError (Metal has no double)

Every literal is typed: ``literal(0.0, HALF) == "static_cast<half>(0.0f)"``; the
value is rounded to the destination type in Python first, so the ``float``
literal inside the cast is exact and the cast never rounds a second time.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.types import f32_to_bf16_bits


@dataclass(frozen=True)
class MslType:
    """A Metal scalar type. ``storage`` is its element type in a buffer (``bool``
    is a byte, as torch stores it); ``unsigned`` the same-width unsigned type of
    an integer; ``via_float``: arithmetic is written through ``float`` (bfloat)."""

    name: str
    kind: str  # "float" | "int" | "bool"
    bits: int
    unsigned: str = ""
    storage: str = ""
    via_float: bool = False

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_half_precision(self) -> bool:
        return self.is_float and self.bits == 16

    @property
    def buffer_type(self) -> str:
        return self.storage or self.name

    def __str__(self) -> str:
        return self.name


FLOAT = MslType("float", "float", 32)
HALF = MslType("half", "float", 16)
BFLOAT = MslType("bfloat", "float", 16, via_float=True)
BOOL = MslType("bool", "bool", 1, unsigned="bool", storage="uchar")
CHAR = MslType("char", "int", 8, unsigned="uchar")
SHORT = MslType("short", "int", 16, unsigned="ushort")
INT = MslType("int", "int", 32, unsigned="uint")
LONG = MslType("long", "int", 64, unsigned="ulong")
_INTS = {1: BOOL, 8: CHAR, 16: SHORT, 32: INT, 64: LONG}

INT32_LIMIT = 2**31 - 1


def msl_type(t: Attribute, index: MslType = INT) -> MslType:
    """The Metal type of an MLIR scalar type; ``index`` is the kernel's index type."""
    if isinstance(t, IndexType):
        return index
    if isinstance(t, IntegerType) and t.width.data in _INTS:
        return _INTS[t.width.data]
    match t:
        case Float32Type():
            return FLOAT
        case Float16Type():
            return HALF
        case BFloat16Type():
            return BFLOAT
        case Float64Type():
            raise CodegenError("Metal has no 64-bit floating point type: f64 cannot be printed as MSL")
    raise CodegenError(f"type {t} has no Metal counterpart")


def index_type(extent: int) -> MslType:
    """``int`` when every index value of a kernel is below 2^31 (``extent`` is the
    largest buffer extent, grid size or index constant), else ``long``: 64-bit
    integer math (division above all) is slow on Apple GPUs."""
    return INT if extent <= INT32_LIMIT else LONG


def _round(value: float, t: MslType) -> float:
    """``value`` rounded (nearest-even) to ``t``'s precision, as a Python float."""
    if t is HALF:
        try:
            return struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    try:
        f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        f32 = math.copysign(math.inf, value)
    if t is BFLOAT:
        return struct.unpack("<f", struct.pack("<I", f32_to_bf16_bits(f32) << 16))[0]
    return f32


def float_literal(value: float) -> str:
    """A ``float`` literal for an f32-exact ``value``: the shortest decimal that
    reads back to the same float (``1.0f``, ``9.99999975e-06f``, ``INFINITY``)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    bits = struct.pack("<f", value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == bits:
            break
    if not any(c in text for c in ".en"):
        text += ".0"
    return f"{text}f"


def int_literal(value: int, t: MslType) -> str:
    """A literal of integer type ``t``; ``value`` is wrapped to ``t``'s width first."""
    if t is BOOL:
        return "true" if value & 1 else "false"
    half = 1 << (t.bits - 1)
    v = ((value + half) % (1 << t.bits)) - half
    text = str(v) if v != -half else f"({v + 1} - 1)"
    if t is LONG:
        return f"{text}L" if v != -half else f"({v + 1}L - 1L)"
    if t is INT:
        return text
    return f"static_cast<{t.name}>({text})"


def literal(value: float | int, t: MslType) -> str:
    """A typed literal of ``t``: ``float`` literals carry ``f``; half and bfloat
    are explicit ``static_cast``s of exact float literals; small ints are cast."""
    if t.is_float:
        text = float_literal(_round(float(value), t))
        return text if t is FLOAT else f"static_cast<{t.name}>({text})"
    return int_literal(int(value), t)
