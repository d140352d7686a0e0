"""The arithmetic of polyphase convolution (``tsr/ops_polyphase.py``), one
spatial dim at a time, with no IR: the ops' verifiers, the fold pass, the
kernel lowering and a host program's weight step (which loads with no IR) share it.

    d = PolyphaseDim(scale=2, kernel=3, padding=1)
    d.taps, d.first, d.shifts        # 2, (-1, 0), (0, 1)
    d.pads, d.conv_size(32)          # (1, 1), 33
    polyphase_weight([d, d], w)      # [C_out, C_in, 3, 3] -> [4*C_out, C_in, 2, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the dialect's verifiers use the arithmetic; only the weight step needs torch
    import torch


@dataclass(frozen=True)
class PolyphaseDim:
    """One spatial dim of ``conv(upsample(x, scale), kernel, padding)`` with
    ``2*padding == kernel - 1`` (the output has the upsampled size).

    Output ``y = scale*i + a`` reads upsampled rows ``y - padding + t`` for taps
    ``t < kernel``, i.e. input rows ``i + (a - padding + t) // scale``: phase
    ``a`` has its first input row at offset ``first[a]`` and folds tap ``t``
    into its tap ``(a - padding + t) // scale - first[a]``."""

    scale: int
    kernel: int
    padding: int

    @staticmethod
    def supports(scale: int, kernel: int, padding: int) -> bool:
        return scale >= 1 and kernel >= 1 and 2 * padding == kernel - 1

    @cached_property
    def first(self) -> tuple[int, ...]:
        return tuple((a - self.padding) // self.scale for a in range(self.scale))

    def tap(self, a: int, t: int) -> int:
        """The phase-``a`` tap that original tap ``t`` folds into."""
        return (a - self.padding + t) // self.scale - self.first[a]

    @cached_property
    def taps(self) -> int:
        """The phase kernel's size (the largest over the phases)."""
        return max(self.tap(a, self.kernel - 1) + 1 for a in range(self.scale))

    @cached_property
    def shifts(self) -> tuple[int, ...]:
        """Where phase ``a``'s rows start in the polyphase conv's output."""
        return tuple(f - self.first[0] for f in self.first)

    @cached_property
    def pads(self) -> tuple[int, int]:
        """Low/high padding of the input for the polyphase conv (the same for every
        input length ``n``: its output, ``conv_size(n)``, reads ``n + low + high`` rows)."""
        low = -self.first[0]
        return low, self.shifts[-1] + self.taps - 1 - low

    def conv_size(self, n: int) -> int:
        """The polyphase conv's output length: every phase's ``n`` rows."""
        return n + self.shifts[-1]


def polyphase_weight(dims: Sequence[PolyphaseDim], w: torch.Tensor) -> torch.Tensor:
    """The polyphase conv's weight (``tsr.polyphase_weight``): the taps
    ``[C_out * C_in, K]`` times the 0/1 fold ``[K, phase, phase tap]`` (:func:`_fold`),
    one matmul, then phases moved ahead of the output channels. Half weights are
    summed in f32 and rounded once."""
    import torch

    acc = torch.float32 if w.dtype in (torch.float16, torch.bfloat16) else w.dtype
    dims = tuple(dims)
    fold = _fold(dims, acc, w.device)
    c_out, c_in = w.shape[:2]
    phases, taps = fold.shape[1:]
    out = w.reshape(c_out * c_in, -1).to(acc) @ fold.reshape(fold.shape[0], -1)
    out = out.reshape(c_out * c_in, phases, taps).transpose(0, 1)  # [phase, C_out * C_in, phase taps]
    return out.reshape(phases * c_out, c_in, *(d.taps for d in dims)).to(w.dtype)


@lru_cache(maxsize=64)
def _fold(dims: tuple[PolyphaseDim, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[kernel taps, phases, phase taps]``, each flattened over ``dims`` (first dim
    slowest): 1 where a phase's tap sums an original tap; the product of the per-dim
    0/1 matrices."""
    import torch

    fold = torch.ones(1, 1, 1, dtype=torch.float64)
    for dim in dims:
        one = torch.zeros(dim.kernel, dim.scale, dim.taps, dtype=torch.float64)
        for a in range(dim.scale):
            for t in range(dim.kernel):
                one[t, a, dim.tap(a, t)] = 1
        k, p, q = fold.shape
        fold = (fold[:, None, :, None, :, None] * one[None, :, None, :, None, :]).reshape(
            k * dim.kernel, p * dim.scale, q * dim.taps)
    return fold.to(device=device, dtype=dtype)
