"""Element types of the ``tsr`` dialect and their torch dtypes.

Signed torch integers map to MLIR's signless integers (as StableHLO does),
unsigned ones to ``ui8``..``ui64``, ``bool`` to ``i1`` and complex dtypes to
``complex<f32>``/``complex<f64>``/``complex<f16>`` (no kernel computes those:
their ops stay ATen calls):

    tensor<4x8xi8>            // torch.int8
    tensor<4x8xui8>           // torch.uint8
    tensor<4xi1>              // torch.bool
    tensor<4xcomplex<f32>>    // torch.complex64
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

if TYPE_CHECKING:
    import torch

ui8 = IntegerType(8, Signedness.UNSIGNED)
ui16, ui32, ui64 = (IntegerType(w, Signedness.UNSIGNED) for w in (16, 32, 64))

# Element types by torch dtype name; torch itself is imported only when a
# conversion is asked for, so IR-only tools start without it.
_BY_NAME: dict[str, Attribute] = {
    "float32": f32,
    "float16": f16,
    "bfloat16": bf16,
    "float64": f64,
    "int64": i64,
    "int32": i32,
    "int16": i16,
    "int8": i8,
    "uint8": ui8,
    "uint16": ui16,
    "uint32": ui32,
    "uint64": ui64,
    "bool": i1,
    "complex64": ComplexType(f32),
    "complex128": ComplexType(f64),
    "complex32": ComplexType(f16),
}


_NAME_OF: dict[Attribute, str] = {t: name for name, t in _BY_NAME.items()}


def dtype_name(t: Attribute) -> str:
    """The torch dtype name of an element type (``bf16`` -> ``"bfloat16"``), without importing torch."""
    try:
        return _NAME_OF[t]
    except KeyError:
        raise UnsupportedDtype(f"element type {t} has no torch dtype") from None


@functools.cache
def _tables() -> tuple[dict, dict]:
    import torch

    to_mlir = {getattr(torch, name): t for name, t in _BY_NAME.items()}
    return to_mlir, {v: k for k, v in to_mlir.items()}


class UnsupportedDtype(Exception):
    """A torch dtype (or MLIR element type) with no counterpart on the other side."""


def to_mlir(dtype: torch.dtype) -> Attribute:
    try:
        return _tables()[0][dtype]
    except KeyError:
        raise UnsupportedDtype(f"dtype {dtype} is not supported by tsr") from None


def to_torch(t: Attribute) -> torch.dtype:
    try:
        return _tables()[1][t]
    except KeyError:
        raise UnsupportedDtype(f"element type {t} has no torch dtype") from None


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type))


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1


def is_bool(t: Attribute) -> bool:
    return t == i1


def is_complex(t: Attribute) -> bool:
    return isinstance(t, ComplexType)


SUPPORTED = tuple(_BY_NAME.values())
