"""The arguments of a ``tsr.aten_call``, as attributes and back.

    aten.convolution_backward.default(%g, %x, %w, [16], [1, 1], ..., [True, True, False])
    -> args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.operand<2>, [16 : i64], ...,
               [true, true, false]]

Python ``int`` is ``i64``, ``bool`` is ``i1``, ``float`` is ``f64``, ``None``
is ``unit``, a dtype is its element type, and torch enums (memory formats,
layouts, devices) and complex numbers are ``#tsr.torch<"...">``
(``#tsr.torch<"complex:2.0:-1.5">``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute

from tessera.dialects.tsr import OperandRefAttr, TorchEnumAttr, dtypes

_ENUMS: dict[str, Any] = {
    "contiguous_format": torch.contiguous_format,
    "channels_last": torch.channels_last,
    "channels_last_3d": torch.channels_last_3d,
    "preserve_format": torch.preserve_format,
    "strided": torch.strided,
}
_ENUM_NAMES = {v: k for k, v in _ENUMS.items()}


class UnencodableArgument(Exception):
    """An argument with no attribute form (the op then cannot be a tsr.aten_call)."""


def encode(value: Any, operand_index: Callable[[Any], int]) -> Attribute:
    """``value`` as an attribute; ``operand_index(v)`` numbers tensor operands."""
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if value is None:
        return UnitAttr()
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, torch.dtype):
        try:
            return dtypes.to_mlir(value)
        except dtypes.UnsupportedDtype as e:
            raise UnencodableArgument(str(e)) from None
    if isinstance(value, torch.device):
        return TorchEnumAttr(f"device:{value}")
    if isinstance(value, complex):
        return TorchEnumAttr(f"complex:{value.real!r}:{value.imag!r}")
    if isinstance(value, (list, tuple)):
        return ArrayAttr([encode(v, operand_index) for v in value])
    try:
        if value in _ENUM_NAMES:
            return TorchEnumAttr(_ENUM_NAMES[value])
    except TypeError:
        pass
    try:
        return OperandRefAttr(operand_index(value))
    except KeyError:
        raise UnencodableArgument(f"cannot encode argument {value!r} of type {type(value).__name__}") from None


def encode_call(
    args: Sequence[Any], kwargs: dict[str, Any], operand_index: Callable[[Any], int]
) -> tuple[ArrayAttr, DictionaryAttr | None]:
    a = ArrayAttr([encode(v, operand_index) for v in args])
    k = DictionaryAttr({n: encode(v, operand_index) for n, v in kwargs.items()}) if kwargs else None
    return a, k


def decode(attr: Attribute, operands: Sequence[Any], device: torch.device | None = None) -> Any:
    """The Python value of an encoded argument; ``#tsr.operand<i>`` is ``operands[i]``.

    ``device`` (when given) replaces recorded devices, so a graph captured on
    one device runs on another."""
    if isinstance(attr, OperandRefAttr):
        return operands[attr.index.data]
    if isinstance(attr, IntegerAttr):
        return bool(attr.value.data) if attr.type == i1 else int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, UnitAttr):
        return None
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr):
        return [decode(a, operands, device) for a in attr.data]
    if isinstance(attr, TorchEnumAttr):
        v = attr.value.data
        if v.startswith("device:"):
            return device if device is not None else torch.device(v.removeprefix("device:"))
        if v.startswith("complex:"):
            _, re, im = v.split(":")
            return complex(float(re), float(im))
        return _ENUMS[v]
    return dtypes.to_torch(attr)
