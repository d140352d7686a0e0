"""Values computed from weights once and reused while the weights are unchanged.

    packed = PackedWeight(lambda w: torch.ops.mkldnn._reorder_convolution_weight(w, ...))
    y = conv(x, packed(w))     # packs on the first call, and again only when w changes

    folded = PerVersion(lambda w, s: w * s)    # any function of several tensors
    folded(w, s)               # computed again only when w or s changes

"Unchanged" means the same storage pointer, shape, strides, dtype and version
counter (an in-place update such as ``w.mul_(2)`` bumps it). The cache holds
its sources' storages alive, so their memory cannot be freed and handed to
another tensor that would then look unchanged. This is how a model's
parameters stay packed across calls, as Inductor's freezing packs them,
without freezing them: a parameter updated in place is packed again.
(Tensor identity is no key: AOTAutograd hands a compiled graph new tensor
objects for the same parameters on each call.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def version_key(t: torch.Tensor) -> tuple:
    """What identifies a tensor's contents without reading them."""
    return (t.data_ptr(), t._version, t.shape, t.stride(), t.dtype, t.device)


class PerVersion:
    """``fn(*tensors)``, computed again only when one of the tensors changed."""

    def __init__(self, fn: Callable[..., Any]):
        self._fn = fn
        self._key: tuple | None = None
        self._storages: list[torch.UntypedStorage] = []
        self._value: Any = None
        self.packs = 0
        """How many times the value was computed (tests, diagnostics)."""

    def __call__(self, *tensors: torch.Tensor) -> Any:
        key = tuple(version_key(t) for t in tensors)
        if self._key != key:
            self._value = self._fn(*tensors)
            self._key, self._storages = key, [t.untyped_storage() for t in tensors]
            self.packs += 1
        return self._value


class PackedWeight(PerVersion):
    """One weight in a library's own format (``PerVersion`` of one tensor)."""
