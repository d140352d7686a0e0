"""The ``tsr`` type of an FX node's value (its ``meta["val"]``, a fake tensor).

    tensor_type(FakeTensor(1, 8, 4, 4, channels-last strides))
        == tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import NoneType, TensorType
from xdsl.ir import Attribute

from tessera.dialects.tsr import LayoutAttr, dtypes
from tessera.dialects.tsr.layout import perm_from_strides

from ..errors import ImportFailure


def tensor_type(val: Any) -> TensorType:
    """The ``tsr`` type of a (fake) tensor: shape, dtype and layout from strides."""
    if not isinstance(val, torch.Tensor):
        raise ImportFailure(f"expected a tensor, got {type(val).__name__}")
    shape = []
    for s in val.shape:
        if not isinstance(s, int):
            raise ImportFailure(f"symbolic size {s}: a graph is imported per size class (size_specialization.py)")
        shape.append(s)
    strides = val.stride() if val.layout == torch.strided else None
    perm = perm_from_strides(shape, strides) if strides is not None else tuple(range(len(shape)))
    try:
        elem = dtypes.to_mlir(val.dtype)
    except dtypes.UnsupportedDtype as e:
        raise ImportFailure(str(e)) from None
    return TensorType(elem, shape, LayoutAttr(perm))


def value_type(val: Any) -> Attribute:
    return NoneType() if val is None else tensor_type(val)
