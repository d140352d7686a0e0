"""The layouts conv gradients are read and written in, shared by the ops of the backward
graph on tessera's kernels (``conv_input_grad``, ``conv_weight_grad``):

    in_kernel_layout(t)        # (t, "channels_last") or (t.contiguous(), "contiguous")
    in_layout(t, True)         # t as channels-last (channels_last_3d at rank 5)
    is_channels_last(t)        # stored channels-last, and not also contiguous
"""

from __future__ import annotations

import torch


def in_kernel_layout(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """``t`` and the layout a conv kernel reads it in: its own, or a contiguous copy."""
    if is_channels_last(t):
        return t, "channels_last"
    return t.contiguous(), "contiguous"


def in_layout(t: torch.Tensor, as_channels_last: bool) -> torch.Tensor:
    """``t`` stored channels-last where ``as_channels_last``, else contiguous."""
    return t.contiguous(memory_format=channels_last_format(t) if as_channels_last else torch.contiguous_format)


def channels_last_format(t: torch.Tensor) -> torch.memory_format:
    return torch.channels_last if t.dim() == 4 else torch.channels_last_3d


def is_channels_last(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=channels_last_format(t)) and not t.is_contiguous()
