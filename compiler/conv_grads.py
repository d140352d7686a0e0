"""What the backward graph's conv-gradient ops on tessera's kernels (``conv_input_grad``,
``conv_weight_grad``) share: the layouts they read and write, and ATen's computation of one
gradient where the kernel does not apply:

    in_kernel_layout(t)        # (t, "channels_last") or (t.contiguous(), "contiguous")
    in_layout(t, True)         # t as channels-last (channels_last_3d at rank 5)
    is_channels_last(t)        # stored channels-last, and not also contiguous
    aten_gradient(dy, x, w, stride, padding, dilation, 0, False)   # dx, contiguous
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


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


def aten_gradient(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, stride, padding, dilation, which: int,
                  channels_last: bool) -> torch.Tensor:
    """Gradient ``which`` (0: the input's, 1: the weight's) of a dense conv by ATen's
    ``convolution_backward``, in the layout the op was traced with. Of ``x`` and ``w`` only
    the sizes of the one whose gradient is not asked are read (an empty tensor serves)."""
    mask = [which == 0, which == 1, False]
    g = aten.convolution_backward(dy, x, w, None, stride, padding, dilation, False, [0] * (w.dim() - 2), 1, mask)
    return in_layout(g[which], channels_last)
