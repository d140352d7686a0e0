"""The ``tsr`` type of an FX node's value (its ``meta["val"]``, a fake tensor).

    tensor_type(FakeTensor(1, 8, 4, 4, channels-last strides))
        == tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
    tensor_type(FakeTensor(s0, 8, s1, s1, contiguous))      # symbolic sizes: dynamic dims
        == tensor<?x8x?x?xf32>
    value_type(s0)                                          # a size of the graph
        == i64
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import NoneType, TensorType, i64
from xdsl.ir import Attribute

from tessera.dialects.tsr import LayoutAttr, dtypes
from tessera.dialects.tsr.layout import perm_from_strides
from tessera.dialects.tsr.shapes import DYNAMIC

from ..errors import ImportFailure


def tensor_type(val: Any) -> TensorType:
    """The ``tsr`` type of a (fake) tensor: shape, dtype and layout from strides."""
    if not isinstance(val, torch.Tensor):
        raise ImportFailure(f"expected a tensor, got {type(val).__name__}")
    shape = [s if isinstance(s, int) else DYNAMIC for s in val.shape]
    strides = val.stride() if val.layout == torch.strided else None
    perm = _dim_order(val, shape, strides) if strides is not None else tuple(range(len(shape)))
    try:
        elem = dtypes.to_mlir(val.dtype)
    except dtypes.UnsupportedDtype as e:
        raise ImportFailure(str(e)) from None
    return TensorType(elem, shape, LayoutAttr(perm))


def size_hint(n: Any) -> int:
    """The traced example's value of a size that may be symbolic, adding no guard
    (``optimization_hint``; a torch before 2.13 lacks it: the size's own hint, which
    every backed size of a Dynamo trace has)."""
    try:
        from torch.fx.experimental.symbolic_shapes import optimization_hint
    except ImportError:
        return n if isinstance(n, int) else int(n.node.hint)
    return optimization_hint(n)


def _dim_order(val: Any, shape: list[int], strides: tuple) -> tuple[int, ...]:
    """The dim order of strides that may be symbolic: ``perm_from_strides`` of
    the traced example's strides, kept where the shape environment proves each
    dim's stride larger than the next one's, or dense over it (the next one's
    stride times its size, which may be 1: ATen's ``Max(1, n)``), without adding
    guards: it holds at every size."""
    if all(isinstance(s, int) for s in strides) and DYNAMIC not in shape:
        return perm_from_strides(shape, strides)
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    order = perm_from_strides([size_hint(n) for n in val.shape], [size_hint(s) for s in strides])
    big = [d for d in order if not known(val.shape[d] == 1) and not known(strides[d] == 0)]

    def outer(a: int, b: int) -> bool:  # dim a is outside dim b at every size
        return (known(strides[a] > strides[b]) or (a < b and known(strides[a] == strides[b]))
                or known(strides[a] == strides[b] * torch.sym_max(1, val.shape[b])))  # dense: b's size may be 1

    if all(outer(a, b) for a, b in zip(big, big[1:])):
        return order
    raise ImportFailure(f"symbolic strides {tuple(strides)} whose order depends on the sizes")


def value_type(val: Any) -> Attribute:
    if val is None:
        return NoneType()
    if isinstance(val, (torch.SymInt, int)) and not isinstance(val, bool):
        return i64
    return tensor_type(val)
