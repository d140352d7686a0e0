"""Element types of the ``tsr`` dialect and their torch dtypes.

Signed torch integers map to MLIR's signless integers (as StableHLO does),
``uint8`` to ``ui8`` and ``bool`` to ``i1``:

    tensor<4x8xi8>     // torch.int8
    tensor<4x8xui8>    // torch.uint8
    tensor<4xi1>       // torch.bool
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
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

ui8 = IntegerType(8, Signedness.UNSIGNED)

_TO_MLIR: dict[torch.dtype, Attribute] = {
    torch.float32: f32,
    torch.float16: f16,
    torch.bfloat16: bf16,
    torch.float64: f64,
    torch.int64: i64,
    torch.int32: i32,
    torch.int16: i16,
    torch.int8: i8,
    torch.uint8: ui8,
    torch.bool: i1,
}
_TO_TORCH = {v: k for k, v in _TO_MLIR.items()}


class UnsupportedDtype(Exception):
    """A torch dtype (or MLIR element type) with no counterpart on the other side."""


def to_mlir(dtype: torch.dtype) -> Attribute:
    try:
        return _TO_MLIR[dtype]
    except KeyError:
        raise UnsupportedDtype(f"dtype {dtype} is not supported by tsr") from None


def to_torch(t: Attribute) -> torch.dtype:
    try:
        return _TO_TORCH[t]
    except KeyError:
        raise UnsupportedDtype(f"element type {t} has no torch dtype") from None


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type))


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data > 1


def is_bool(t: Attribute) -> bool:
    return t == i1


SUPPORTED = tuple(_TO_MLIR.values())
