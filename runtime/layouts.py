"""Tensors in a given physical placement: dtype, logical shape and strides.

The runtime knows no IR: the compiler turns a ``tsr`` type such as
``tensor<1x8x4x4xf32, #tsr.layout<nhwc>>`` into a :class:`Placement`
(``compiler/placements.py``), here a plain record:

    p = Placement(torch.float32, (1, 8, 4, 4), (128, 1, 32, 8))   # channels-last
    x = in_layout(t, p)        # t itself when it already fits, else a copy that does
    y = allocate(p, "cpu")     # uninitialised, in that layout
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Placement:
    """What a tensor looks like in memory: dtype, shape, strides. Computed once
    per type where tensors are checked on every call."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @classmethod
    def of(cls, t: torch.Tensor) -> Placement:
        """The placement ``t`` has."""
        return cls(t.dtype, tuple(t.shape), tuple(t.stride()))

    def holds(self, t: torch.Tensor) -> bool:
        if t.stride() == self.strides:  # the common case, in one comparison (checked on every call)
            return t.shape == self.shape and t.dtype == self.dtype
        return t.dtype == self.dtype and tuple(t.shape) == self.shape and same_strides(t.shape, t.stride(), self.strides)


@dataclass(frozen=True)
class OrderPlacement:
    """A placement whose sizes are known at run time only: the dtype, the sizes
    it knows (``-1`` for the others) and the dim order, outermost first. A tensor
    it holds has the known sizes and the dense strides of that order.

        OrderPlacement(torch.float32, (1, 8, -1, -1), (0, 2, 3, 1)).sized((1, 8, 4, 4))
            == Placement(torch.float32, (1, 8, 4, 4), (128, 1, 32, 8))
    """

    dtype: torch.dtype
    shape: tuple[int, ...]
    order: tuple[int, ...]
    _dense: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    """Shapes seen that have the known sizes -> their dense strides (checked on every call)."""

    def sized(self, shape: Sequence[int]) -> Placement:
        """The placement for a tensor of ``shape`` (given as broadcast to this rank)."""
        shape = (1,) * (len(self.shape) - len(shape)) + tuple(shape)
        sizes = tuple(g if n < 0 else n for n, g in zip(self.shape, shape))
        return Placement(self.dtype, sizes, dense_strides(sizes, self.order))

    def holds(self, t: torch.Tensor) -> bool:
        shape = t.shape
        strides = self._dense.get(shape)
        if strides is None:
            if len(shape) != len(self.shape) or any(n >= 0 and n != m for n, m in zip(self.shape, shape)):
                return False
            if len(self._dense) >= 64:
                self._dense.clear()
            strides = self._dense[shape] = dense_strides(shape, self.order)
        if t.dtype != self.dtype:
            return False
        st = t.stride()
        return st == strides or same_strides(shape, st, strides)


@dataclass(frozen=True)
class SizedLayout:
    """The layout of a kernel output of dynamic sizes (a program's ``SizedAlloc``):
    per dim ``(input, dim, mul, add, div)`` is ``(size(input, dim) * mul + add) // div``
    (input -1: the number ``add``; the compiler's ``lowering/dim_exprs.py``), stored
    densely in dim order ``order``.

        SizedLayout(torch.float32, ((0, 0, 1, 0, 1), (-1, 0, 0, 8, 1)), (0, 1))(x)   # ((n, 8), (8, 1), float32), n = x.shape[0]
    """

    dtype: torch.dtype
    dims: tuple[tuple[int, int, int, int, int], ...]
    order: tuple[int, ...]

    def __call__(self, *inputs: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
        sizes = tuple(add if i < 0 else (inputs[i].shape[d] * mul + add) // div for i, d, mul, add, div in self.dims)
        return sizes, dense_strides(sizes, self.order), self.dtype


def dense_strides(sizes: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """The strides of a dense tensor of ``sizes`` stored in dim order ``order`` (outermost first).
    The IR's side has its twin, ``dialects/dim_orders.strides_for``: the runtime
    imports no other layer (``test_layering.py``), and the dialect none."""
    strides = [0] * len(sizes)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(sizes[d], 1)
    return tuple(strides)


def extent(sizes: Sequence[int], strides: Sequence[int]) -> int:
    """How many elements a tensor of ``sizes`` and ``strides`` spans, from its first
    to its last (0 when it is empty)."""
    if any(n == 0 for n in sizes):
        return 0
    return 1 + sum((n - 1) * abs(s) for n, s in zip(sizes, strides))


def allocate(placement: Placement, device: torch.device | str = "cpu") -> torch.Tensor:
    """An uninitialised tensor in ``placement``."""
    return torch.empty_strided(placement.shape, placement.strides, dtype=placement.dtype, device=device)


def in_layout(t: torch.Tensor, placement: Placement | OrderPlacement) -> torch.Tensor:
    """``t`` (broadcast to and) stored as ``placement`` says; copies only if needed."""
    if placement.holds(t):
        return t
    if isinstance(placement, OrderPlacement):
        placement = placement.sized(t.shape)
    out = allocate(placement, t.device)
    out.copy_(t.expand(out.shape) if t.shape != out.shape else t)
    return out


def same_strides(shape: Sequence[int], strides: Sequence[int], expected: Sequence[int]) -> bool:
    """Strides that address the same elements as ``expected``: a dim of size 1
    may have any stride, an empty tensor addresses nothing, and an expected
    stride of ``-1`` (a kernel's dynamic stride) is any."""
    return 0 in shape or all(s == e or n == 1 or e == -1 for s, e, n in zip(strides, expected, shape))
