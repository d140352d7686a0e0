"""Values computed from weights, reused while the weights are unchanged
under the freezing contract, else computed on every call.

    packed = PackedWeight(lambda w: torch.ops.mkldnn._reorder_convolution_weight(w, ...), freezing=True)
    y = conv(x, packed(w))     # packs on the first call, and again only when w changes

    folded = PerVersion(lambda w, s: w * s, freezing=True)    # any function of several tensors
    folded(w, s)               # computed again only when w or s changes

Without ``freezing`` (the default of the backend option) the value is
computed on every call, as eager computes it: every write to a weight is
seen, including those that no version counter records (``p.data.mul_(2)``,
``p.data.copy_(w)``, a write through ``p.detach().numpy()``).

With ``freezing`` (``options={"freezing": True}``, like Inductor's
``freezing=True``) the contract is: a weight changes only through writes that
bump its version counter (in-place ops on the parameter, optimizer steps,
``load_state_dict``) or by being replaced. "Unchanged" means the same storage pointer, shape, strides, dtype and version
counter (an in-place update such as ``w.mul_(2)`` bumps it). The cache holds
its sources' storages alive, so their memory cannot be freed and handed to
another tensor that would then look unchanged. This is how a model's
parameters stay packed across calls, as Inductor's freezing packs them,
without freezing them: a parameter updated in place is packed again.
Tensor identity alone is no key (a tensor object's ``.data`` can be swapped,
and a new tensor object can show the same parameter), but it makes the check
cheap: when every tensor is the very object of the last call, with the same
version counter and data pointer, nothing changed, and the full key (shape,
strides, dtype, device) is not built. AOTAutograd hands a compiled graph the
same parameter objects on every call, so that is the common case.

One compiled graph serves every instance of a model class (Dynamo passes the
parameters in as inputs and guards on their sizes, not on which module they
belong to), so the same cache sees the weights of each instance in turn: it
keeps a value per weight (by storage pointer, shape, strides, dtype, device),
the last :data:`WEIGHTS_KEPT`, each recomputed when its version changes. Two
instances of a WAN decoder called in turn had packed every conv weight again
on every call (8x8 latents: 10.4 -> 16.3 ms a call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def version(t: torch.Tensor) -> int:
    """``t``'s version counter; an inference tensor has none (it is written only
    inside ``torch.inference_mode``, and tessera's prepared values are new tensors
    when recomputed): -1, so its identity and data pointer key it."""
    return -1 if t.is_inference() else t._version


WEIGHTS_KEPT = 4
"""Weights (sets of tensors) one cache keeps a computed value for, the most recently used."""


def location_key(t: torch.Tensor) -> tuple:
    """Which tensor it is, up to its contents: a weight updated in place keeps it."""
    return (t.data_ptr(), t.shape, t.stride(), t.dtype, t.device)


class PerVersion:
    """``fn(*tensors)``: with ``freezing``, computed again only when one of the
    tensors changed; without, computed on every call."""

    def __init__(self, fn: Callable[..., Any], freezing: bool = False):
        self._fn = fn
        self.freezing = freezing
        self._kept: dict[tuple, tuple[tuple[int, ...], Any, list[torch.UntypedStorage]]] = {}
        """Location keys of the tensors -> their versions, the value, their storages (held
        alive: freed memory handed to another tensor would look unchanged); least recently used first."""
        self._value: Any = None
        self._last: list[tuple[torch.Tensor, int, int]] = []
        """(tensor, version, data pointer) of each tensor of the last call: the fast check."""
        self.packs = 0
        """How many times the value was computed (tests, diagnostics)."""

    def __reduce__(self) -> tuple:
        """Pickled (in a program the graph cache stores) without the computed value."""
        return type(self), (self._fn, self.freezing)

    def __call__(self, *tensors: torch.Tensor) -> Any:
        if not self.freezing:
            self.packs += 1
            return self._fn(*tensors)
        if self._same_objects(tensors):
            return self._value
        where = tuple(location_key(t) for t in tensors)
        versions = tuple(version(t) for t in tensors)
        kept = self._kept.pop(where, None)
        if kept is None or kept[0] != versions:
            kept = (versions, self._fn(*tensors), [t.untyped_storage() for t in tensors])
            self.packs += 1
        self._kept[where] = kept
        if len(self._kept) > WEIGHTS_KEPT:
            del self._kept[next(iter(self._kept))]
        self._value = kept[1]
        self._last = [(t, version(t), t.data_ptr()) for t in tensors]
        return self._value

    def _same_objects(self, tensors: tuple[torch.Tensor, ...]) -> bool:
        last = self._last
        if len(last) != len(tensors):
            return False
        try:
            for t, (was, seen, ptr) in zip(tensors, last):  # on every call, for each parameter: kept lean
                if t is not was or t._version != seen or t.data_ptr() != ptr:
                    return False
        except RuntimeError:  # an inference tensor has no version counter: the full key decides
            return False
        return True


class PackedWeight(PerVersion):
    """One weight in a library's own format (``PerVersion`` of one tensor)."""
