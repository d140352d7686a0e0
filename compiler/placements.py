"""``tsr`` tensor types as the runtime's plain :class:`Placement` records.

    placement_of(tensor<1x8x4x4xf32, #tsr.layout<nhwc>>)
        == Placement(torch.float32, (1, 8, 4, 4), (128, 1, 32, 8))

The runtime knows no IR; the compiler hands it placements. ``in_layout``,
``is_in_layout`` and ``allocate`` here take a type, for the compiler's own use
(the interpreter, the host program).
"""

from __future__ import annotations

import functools

import torch
from xdsl.dialects.builtin import TensorType

from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of, strides_for
from tessera.dialects.tsr.shapes import DYNAMIC
from tessera.runtime import layouts
from tessera.runtime.layouts import OrderPlacement, Placement

from .errors import TesseraError


class DynamicPlacement(TesseraError):
    """A type with a dynamic dim has no placement until its sizes are known."""


@functools.lru_cache(maxsize=4096)
def placement_of(ttype: TensorType) -> Placement:
    shape = tuple(ttype.get_shape())
    if DYNAMIC in shape:
        raise DynamicPlacement(f"{ttype} has dynamic dims: its strides are known at run time only")
    return Placement(dtypes.to_torch(ttype.get_element_type()), shape, strides_for(shape, layout_of(ttype)))


def placement_or_order(ttype: TensorType) -> Placement | OrderPlacement:
    """The placement of ``ttype``; with dynamic dims, its dim order (the sizes come with the tensor).

        placement_or_order(tensor<1x8x?x?xf32, #tsr.layout<nhwc>>)
            == OrderPlacement(torch.float32, (1, 8, -1, -1), (0, 2, 3, 1))
    """
    shape = tuple(ttype.get_shape())
    if DYNAMIC not in shape:
        return placement_of(ttype)
    return OrderPlacement(dtypes.to_torch(ttype.get_element_type()), tuple(-1 if n == DYNAMIC else n for n in shape),
                          tuple(layout_of(ttype)))


def allocate(ttype: TensorType, device: torch.device | str = "cpu") -> torch.Tensor:
    """An uninitialised tensor of ``ttype``'s shape and dtype, in its layout."""
    return layouts.allocate(placement_of(ttype), device)


def placement_holding(ttype: TensorType, t: torch.Tensor) -> Placement:
    """The placement of ``ttype`` for the tensor ``t`` it is to hold: a dynamic
    dim takes ``t``'s size (as broadcast to ``ttype``'s rank)."""
    shape = ttype.get_shape()
    if DYNAMIC not in shape:
        return placement_of(ttype)
    given = (1,) * (len(shape) - t.dim()) + tuple(t.shape)
    sizes = tuple(g if d == DYNAMIC else d for d, g in zip(shape, given))
    return Placement(dtypes.to_torch(ttype.get_element_type()), sizes, strides_for(sizes, layout_of(ttype)))


def is_in_layout(t: torch.Tensor, ttype: TensorType) -> bool:
    return placement_holding(ttype, t).holds(t)


def in_layout(t: torch.Tensor, ttype: TensorType) -> torch.Tensor:
    """``t`` (broadcast to and) stored as ``ttype`` says; copies only if needed.
    A dynamic dim is the size ``t`` has there."""
    return layouts.in_layout(t, placement_holding(ttype, t))
