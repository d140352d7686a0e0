"""Buffers a per-call weight pack writes into, kept between calls.

Without freezing a conv's weight is packed on every call (``host_program``'s
pack step); a new tensor each time means fresh pages for the allocator to
fault in, megabytes for a Winograd weight (128->128, F(4x4): 2.4 MB transformed,
2.4 MB packed). Interleaved with oneDNN's calls, a 128->128 28x28 input
gradient took 9.4 ms with new tensors against 2.5 alone. A :class:`KeptPack`
gives its packer the same buffers on every call of a thread:

    pack = KeptPack(WinogradPacker(ws))
    pw = pack(w)      # the packer's outputs, in buffers of this thread's, kept
    pw2 = pack(w2)    # the same memory: pw is overwritten

So what it returns is valid until its next call in the thread: the host program
uses it only for a pack whose result one launch reads right after, on every
call (not under freezing, where packed weights are cached).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import torch

Kept = dict[str, torch.Tensor]


def kept_buffer(into: Kept | None, key: str, shape: Sequence[int]) -> torch.Tensor:
    """``into[key]`` of ``shape`` (made, or made again at another shape), or a new tensor where ``into`` is None."""
    if into is None:
        return torch.empty(tuple(shape))
    t = into.get(key)
    if t is None or tuple(t.shape) != tuple(shape):
        t = into[key] = torch.empty(tuple(shape))
    return t


class KeptPack:
    """``packer(w, into=...)`` with ``into`` this thread's buffers of this pack, kept between calls."""

    def __init__(self, packer: Callable[..., torch.Tensor]):
        self.packer = packer
        self._local = threading.local()

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        into = getattr(self._local, "kept", None)
        if into is None:
            into = self._local.kept = {}
        return self.packer(w, into=into)

    def __reduce__(self) -> tuple:
        return KeptPack, (self.packer,)
