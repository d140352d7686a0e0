"""``conv_backward.convolution_backward`` against ATen's op: each gradient asked for within
float32 tolerance of float64, in the strides ATen's float32 op gives it."""

from __future__ import annotations

import torch

from tessera.compiler.conv_backward import convolution_backward

aten = torch.ops.aten


def assert_backward_matches_aten(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, args: tuple,
                                 same_strides: bool = True) -> None:
    """``args``: ``convolution_backward``'s after ``(dy, x, w)``, its output mask last;
    ``same_strides=False``: the gradients may come in other strides than ATen's."""
    got = convolution_backward(dy, x, w, *args)
    want = aten.convolution_backward.default(dy.double(), x.double(), w.double(), *args)
    wanted = aten.convolution_backward.default(dy, x, w, *args)
    for g, e, f, on in zip(got, want, wanted, args[-1], strict=True):
        assert (g is None) == (not on)
        if on:
            torch.testing.assert_close(g.double(), e, rtol=1e-4, atol=1e-5 * e.abs().max().item())
            assert g.stride() == f.stride() or not same_strides
