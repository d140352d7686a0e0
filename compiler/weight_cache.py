"""A weight transformed once for a library kernel and reused while it is unchanged.

    packed = PackedWeight(lambda w: torch.ops.mkldnn._reorder_convolution_weight(w, ...))
    y = conv(x, packed(w))     # packs on the first call, and again only when w changes

"Unchanged" means the same storage pointer, shape, strides, dtype and version
counter (an in-place update such as ``w.mul_(2)`` bumps it). The cache holds
the packed weight's source storage alive, so its memory cannot be freed and
handed to another tensor that would then look unchanged. This is how a
model's parameters stay packed across calls, as Inductor's freezing packs
them, without freezing them: a parameter updated in place is packed again.
(Tensor identity is no key: AOTAutograd hands a compiled graph new tensor
objects for the same parameters on each call.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class PackedWeight:
    def __init__(self, pack: Callable[[torch.Tensor], Any]):
        self._pack = pack
        self._key: tuple = ()
        self._storage: torch.UntypedStorage | None = None
        self._value: Any = None
        self.packs = 0
        """How many times the weight was packed (tests, diagnostics)."""

    def __call__(self, w: torch.Tensor) -> Any:
        key = (w.data_ptr(), w._version, tuple(w.shape), tuple(w.stride()), w.dtype)
        if self._storage is None or self._key != key:
            self._value = self._pack(w)
            self._key, self._storage = key, w.untyped_storage()
            self.packs += 1
        return self._value
