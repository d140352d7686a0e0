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
from functools import cached_property
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
    """The polyphase conv's weight (``tsr.polyphase_weight``). Per spatial dim, a 0/1
    matrix [phase, phase tap, tap] sums the taps each phase folds together; phases
    end up ahead of the output channels. Half weights are summed in f32 and rounded once."""
    import torch

    out = w.float() if w.dtype in (torch.float16, torch.bfloat16) else w
    for d, dim in enumerate(dims):
        fold = torch.zeros(dim.scale, dim.taps, dim.kernel, dtype=out.dtype, device=w.device)
        for a in range(dim.scale):
            for t in range(dim.kernel):
                fold[a, dim.tap(a, t), t] = 1
        axis = out.dim() - len(dims) + d  # this dim's tap axis (phases are prepended)
        out = torch.tensordot(out, fold, dims=([axis], [2]))  # [..., phase, phase tap] at the end
        out = out.movedim(-2, d).movedim(-1, axis + 1)
    phases = out.shape[: len(dims)]
    return out.reshape(-1, *out.shape[len(phases) + 1:]).to(w.dtype).contiguous()
