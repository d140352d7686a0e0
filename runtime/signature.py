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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BufferSpec:
    """One memref argument: logical shape, strides in elements, torch dtype name."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str
    is_output: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "strides": list(self.strides), "dtype": self.dtype, "is_output": self.is_output}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BufferSpec:
        return cls(tuple(d["shape"]), tuple(d["strides"]), str(d["dtype"]), bool(d["is_output"]))


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, its parallel grid and one :class:`BufferSpec` per argument."""

    name: str
    grid: tuple[int, ...]
    args: tuple[BufferSpec, ...]

    @property
    def grid_size(self) -> int:
        return math.prod(self.grid)

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if a.is_output)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "grid": list(self.grid), "args": [a.to_json() for a in self.args]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelSignature:
        return cls(str(d["name"]), tuple(d["grid"]), tuple(BufferSpec.from_json(a) for a in d["args"]))
