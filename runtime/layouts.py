"""Tensors stored in the layout their ``tsr`` type names.

A ``tensor<1x8x4x4xf32, #tsr.layout<nhwc>>`` lives in memory as a torch tensor
of logical shape 1x8x4x4 with channels-last strides; :func:`in_layout` makes
(or keeps) such a tensor, and :func:`allocate` makes an empty one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from xdsl.dialects.builtin import TensorType

from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of, strides_for


def allocate(ttype: TensorType, device: torch.device | str = "cpu") -> torch.Tensor:
    """An uninitialised tensor of ``ttype``'s shape and dtype, in its layout."""
    shape = tuple(ttype.get_shape())
    return torch.empty_strided(
        shape, strides_for(shape, layout_of(ttype)), dtype=dtypes.to_torch(ttype.get_element_type()), device=device
    )


@dataclass(frozen=True)
class Placement:
    """What a tensor of a ``tsr`` type looks like in memory: dtype, shape,
    strides. Computed once per type where tensors are checked on every call."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @classmethod
    def of(cls, ttype: TensorType) -> Placement:
        shape = tuple(ttype.get_shape())
        return cls(dtypes.to_torch(ttype.get_element_type()), shape, strides_for(shape, layout_of(ttype)))

    def holds(self, t: torch.Tensor) -> bool:
        if t.stride() == self.strides:  # the common case, in one comparison (checked on every call)
            return t.shape == self.shape and t.dtype == self.dtype
        return t.dtype == self.dtype and tuple(t.shape) == self.shape and same_strides(t.shape, t.stride(), self.strides)


def is_in_layout(t: torch.Tensor, ttype: TensorType) -> bool:
    return Placement.of(ttype).holds(t)


def in_layout(t: torch.Tensor, ttype: TensorType) -> torch.Tensor:
    """``t`` (broadcast to and) stored as ``ttype`` says; copies only if needed."""
    if is_in_layout(t, ttype):
        return t
    out = allocate(ttype, t.device)
    out.copy_(t.expand(out.shape) if t.shape != out.shape else t)
    return out


def same_strides(shape: Sequence[int], strides: Sequence[int], expected: Sequence[int]) -> bool:
    """Strides that address the same elements as ``expected``: a dim of size 1
    may have any stride, and an empty tensor addresses nothing."""
    return 0 in shape or all(s == e or n == 1 for s, e, n in zip(strides, expected, shape))
