"""What a compiled kernel expects of its arguments.

Every kernel of an artifact travels with a :class:`KernelSignature`; the
runtime checks each launched tensor against its :class:`BufferSpec` before a
pointer reaches machine code. For

    func.func @fused_0(%x: memref<2x8x4x4xf32, strided<[128, 1, 32, 8]>>,
                       %y: memref<2x8x4x4xf32, strided<[128, 1, 32, 8]>>)
        attributes {tsr.kernel, tsr.outputs = array<i64: 1>}
    // scf.parallel over (2, 8)

the signature is ``KernelSignature("fused_0", grid=(2, 8), args=(BufferSpec((2, 8, 4, 4),
(128, 1, 32, 8), "float32", False), BufferSpec(..., True)))``. Dtypes are torch
dtype names so that a signature is plain data (JSON in the compile cache).

A kernel compiled for sizes known only at run time has ``-1`` (``DYNAMIC``) for
each such size and stride, and a grid extent ``(arg, dim)`` names the tensor
size it is (``(arg, dim, tile)``: the number of ``tile``-wide tiles covering
it; ``(arg, dim, tile, last)``: of the product of the sizes of dims ``dim`` to
``last``, a row of merged dims, ``lowering/row_dims.py``). Such a kernel takes one more pointer, after the buffers: an ``i64`` array
of the dynamic sizes, then the dynamic strides, of each argument in order
(:attr:`KernelSignature.dim_slots`, :meth:`KernelSignature.dims_of`):

    func.func @fused_0(%x: memref<?x8xf32>, %y: memref<?x8xf32>)   // scf.parallel to (memref.dim %y, 0)
    KernelSignature("fused_0", grid=((1, 0),), args=(BufferSpec((-1, 8), (8, 1), ...), ...))
    dims_of((x, y)) == [x.shape[0], y.shape[0]]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

DYNAMIC = -1
"""A size or stride that a kernel takes at run time."""

GridDim = int | tuple[int, int] | tuple[int, int, int] | tuple[int, int, int, int]
"""A grid extent: a number, ``(arg, dim)``: the size of argument ``arg`` along
``dim``, ``(arg, dim, tile)``: that size divided by ``tile``, rounded up, or
``(arg, dim, tile, last)``: the product of its sizes along dims ``dim`` to ``last`` so."""


def grid_extent(g: GridDim, tensors: Any) -> int:
    """The extent ``g`` of a launch on ``tensors``."""
    if isinstance(g, int):
        return g
    shape = tensors[g[0]].shape
    n = int(shape[g[1]]) if len(g) < 4 else math.prod(int(m) for m in shape[g[1]:g[3] + 1])
    return -(-n // g[2]) if len(g) >= 3 else n


@dataclass(frozen=True)
class BufferSpec:
    """One memref argument: logical shape, strides in elements, torch dtype name."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    is_output: bool = False
    rows: tuple[tuple[int, ...], ...] = ()
    """Groups of consecutive dims the kernel reads as one (``memref.collapse_shape``):
    a tensor's strides must merge each (:meth:`merges`)."""

    def merges(self, shape: Sequence[int], strides: Sequence[int]) -> bool:
        """Whether a tensor of ``shape`` and ``strides`` holds each of :attr:`rows`
        as one run: every dim's stride is the product of the sizes inside it times
        the innermost dim's stride (the kernel's static one; a dim of size 1 may
        have any stride; an empty tensor addresses nothing).

            BufferSpec((-1, 8, -1, -1), (-1, -1, -1, 1), "float32", rows=((2, 3),)).merges((2, 8, 4, 4), (128, 16, 4, 1))
        """
        if 0 in shape:
            return True
        for group in self.rows:
            inner = group[-1]
            step = self.strides[inner] if self.strides[inner] != DYNAMIC else strides[inner]
            expected = step * shape[inner]
            for d in reversed(group[:-1]):
                if shape[d] != 1 and strides[d] != expected:
                    return False
                expected *= shape[d]
        return True

    @property
    def numel(self) -> int:
        """The element count (a dynamic size counts as 1)."""
        return math.prod(n for n in self.shape if n != DYNAMIC)

    @property
    def dynamic(self) -> bool:
        return DYNAMIC in self.shape or DYNAMIC in self.strides

    def to_json(self) -> dict[str, Any]:
        d = {"shape": list(self.shape), "strides": list(self.strides), "dtype": self.dtype, "is_output": self.is_output}
        return {**d, "rows": [list(g) for g in self.rows]} if self.rows else d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BufferSpec:
        rows = tuple(tuple(int(x) for x in g) for g in d.get("rows", ()))
        return cls(tuple(d["shape"]), tuple(d["strides"]), str(d["dtype"]), bool(d["is_output"]), rows)


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, its parallel grid and one :class:`BufferSpec` per argument."""

    name: str
    grid: tuple[GridDim, ...]
    args: tuple[BufferSpec, ...]
    threads_per_point: int = 1
    """The threads that compute one grid point together (a GPU block per point:
    ``codegen/gpu_reductions.py``); 1 for every kernel of a CPU target."""

    @property
    def dynamic(self) -> bool:
        """Whether the kernel takes sizes at run time (its last pointer: :meth:`dims_of`)."""
        return any(not isinstance(g, int) for g in self.grid) or any(a.dynamic for a in self.args)

    @property
    def num_pointers(self) -> int:
        """The kernel's pointer arguments: one per buffer, and the dims array of a dynamic kernel."""
        return len(self.args) + (1 if self.dynamic else 0)

    @functools.cached_property
    def grid_size(self) -> int:
        """The number of grid points (a dynamic extent counts as 1: see :meth:`grid_size_of`);
        read on every launch of a static kernel, so computed once."""
        return math.prod(g for g in self.grid if isinstance(g, int))

    def grid_size_of(self, tensors: Any) -> int:
        """The number of grid points of a launch on ``tensors``."""
        return math.prod(grid_extent(g, tensors) for g in self.grid)

    @property
    def dim_slots(self) -> tuple[tuple[int, bool, int], ...]:
        """What each entry of the dims array is, in order: ``(arg, True, d)`` the
        size of argument ``arg`` along ``d``, ``(arg, False, d)`` its stride; per
        argument its dynamic sizes, then its dynamic strides."""
        return tuple((i, size, d) for i, a in enumerate(self.args)
                     for size, dims in ((True, a.shape), (False, a.strides))
                     for d, n in enumerate(dims) if n == DYNAMIC)

    def dims_of(self, tensors: Any, slots: tuple[tuple[int, bool, int], ...] | None = None) -> list[int]:
        """The dims array of a dynamic kernel's launch on ``tensors`` (``slots``:
        :attr:`dim_slots`, found once by a caller that launches often)."""
        return [tensors[i].shape[d] if size else tensors[i].stride(d)
                for i, size, d in (self.dim_slots if slots is None else slots)]

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a.is_output)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "grid": [g if isinstance(g, int) else list(g) for g in self.grid],
                "args": [a.to_json() for a in self.args], "threads_per_point": self.threads_per_point}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelSignature:
        grid = tuple(g if isinstance(g, int) else cast(GridDim, tuple(int(x) for x in g)) for g in d["grid"])
        return cls(str(d["name"]), grid, tuple(BufferSpec.from_json(a) for a in d["args"]),
                   int(d.get("threads_per_point", 1)))
