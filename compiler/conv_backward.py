"""The input gradient of a stride-1 3x3 conv as a conv of its own, so that the
compiler chooses how to compute it (Winograd with the weight transformed per
call, where enough output tiles pay for that) as for any forward conv:

    convolution_backward(dy, x, w, [C_out], stride=1, padding=p, ..., mask=[True, True, True])
    // traced as
    gx     = convolution(dy, flip(w, [2, 3]).transpose(0, 1), None, stride=1, padding=2-p)
    gw, gb = convolution_backward(dy, x, w, ..., mask=[False, True, True])[1:]

The same arithmetic: ``dx[n, ci, y, x] = sum dy[n, co, y + p - i, x + p - j] *
w[co, ci, i, j]``, a correlation of ``dy`` padded by ``2 - p`` with the
flipped, transposed weight. ATen's own conv backward (oneDNN on a CPU)
computes the weight's and the bias's gradients as before; the two halves were
separate calls inside it too. Applies on a CPU where the forward conv is 2-D,
3x3, stride 1, dilation 1, one group, not transposed, with padding at most 2,
where the x86 model would run the conv ``dy -> dx`` by Winograd with its weight
transformed on every call (``targets/x86/conv_kernel_model.prefers_winograd_per_call``:
enough channels and 4x4 output tiles). At symbolic sizes the input gradient is
``tessera.conv_input_grad``, which makes this choice per size when run (Winograd of the
weight flipped at the sizes the rule gives it, else tessera's direct kernel reading the
weight flipped: no copy of the weight where the rule leaves a size; the conv of
``flip(w)`` copied it on every call, ``prims.rev``). Elsewhere the op stays
whole (or, on a GPU, Inductor's decomposition applies). The table is one per
process, so the rule does not know which target a graph is built for: for one
without the Winograd kernels (or with ``conv_kernels=False``) the input
gradient runs as the library's forward conv of the flipped weight, which was
not measured against its backward.
"""

from __future__ import annotations

import math

import torch

from tessera.dialects.conv_sizes import is_one_gemm
from tessera.passes.target_models import ConvShape

from . import depthwise_backward as depthwise
from .conv_input_grad import input_grad
from .conv_input_grad import takes as input_grad_takes
from .conv_weight_grad import takes as weight_grad_takes
from .conv_weight_grad import weight_grad
from .targets.x86.conv_kernel_model import prefers_winograd_per_call

aten = torch.ops.aten


def takes(x: torch.Tensor, w: torch.Tensor, stride, padding, dilation, transposed, groups, output_mask) -> bool:
    """Whether the input gradient of this conv is traced as a conv (the module docstring's class:
    the x86 model's per-call Winograd rule, asked of the conv ``dy -> dx``; at static sizes)."""
    if transposed or groups != 1 or not output_mask[0] or x.dim() != 4 or w.dim() != 4 or x.device.type != "cpu":
        return False
    if not all(isinstance(s, int) for s in (*w.shape, x.shape[1])) or tuple(w.shape[2:]) != (3, 3):
        return False
    if list(stride) != [1, 1] or list(dilation) != [1, 1] or not all(0 <= p <= 2 for p in padding):
        return False
    n, c_in, h, wd = x.shape
    if not all(isinstance(s, int) for s in (n, h, wd)):  # ``tessera.conv_input_grad`` chooses when run
        return False
    tiles = n * math.ceil(h / 4) * math.ceil(wd / 4)  # 4x4 tiles of dx, over the batch
    dx = ConvShape(spatial=2, dtype="f32", in_channels=w.shape[0], out_channels=c_in, groups=1, kernel=(3, 3),
                   stride=(1, 1))
    return prefers_winograd_per_call(dx, tiles) is not None


def pointwise_takes(x: torch.Tensor, w: torch.Tensor, stride, padding, transposed, groups) -> bool:
    """Whether this conv's backward is traced as GEMMs (:func:`pointwise_backward`): a
    float32 conv on a CPU, not transposed, that is one GEMM (``conv_sizes.is_one_gemm``)."""
    if transposed or x.dim() not in (4, 5) or w.dim() != x.dim() or x.device.type != "cpu":
        return False
    if x.dtype != torch.float32 or w.dtype != torch.float32:
        return False
    return is_one_gemm(w.shape[2:], stride, padding, groups)


def pointwise_backward(grad, x, w, output_mask):
    """The backward of a 1x1 conv as the two GEMMs it is, over channels-last rows
    (``dy`` and ``x`` as matrices of a row per pixel: views where they are
    channels-last, as a training forward returns them, ``saved_layouts``):

        dx = dy[NHW, C_out] @ w[C_out, C_in]        dw = dy[NHW, C_out]^T @ x[NHW, C_in]

    1.03-2.1x oneDNN's channels-last backward of MobileNetV2's and ResNet-50's 1x1
    convs (batch 8, 1 thread, Xeon; session 36)."""
    c_out, c_in = w.shape[0], w.shape[1]
    last = [0, *range(2, x.dim()), 1]  # NCHW -> NHWC
    rows = aten.reshape.default(aten.permute.default(grad, last), [-1, c_out])
    gx = gw = gb = None
    if output_mask[0]:
        flat = aten.mm.default(rows, aten.reshape.default(w, [c_out, c_in]))
        sizes = [x.shape[0], *x.shape[2:], c_in]
        gx = aten.permute.default(aten.reshape.default(flat, sizes), [0, x.dim() - 1, *range(1, x.dim() - 1)])
    if output_mask[1]:
        x_rows = aten.reshape.default(aten.permute.default(x, last), [-1, c_in])
        gw = aten.reshape.default(aten.mm.default(aten.permute.default(rows, [1, 0]), x_rows), list(w.shape))
    if output_mask[2]:
        gb = aten.sum.dim_IntList(grad, [0, *range(2, grad.dim())])
    return gx, gw, gb


def convolution_backward(grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
                         output_mask, otherwise=None):
    """``aten.convolution_backward`` as GEMMs for a 1x1 conv (:func:`pointwise_takes`); else
    with its input gradient as a conv where :func:`takes`, else
    as ``tessera.conv_input_grad`` where ``conv_input_grad.takes``, and its weight gradient as
    ``tessera.conv_weight_grad`` where ``conv_weight_grad.takes``, or by taps where
    ``depthwise_backward.takes`` (the bias's then a sum of ``grad``); elsewhere the
    decomposition ``otherwise`` (Inductor's), or the op whole."""
    if pointwise_takes(x, w, stride, padding, transposed, groups):
        return pointwise_backward(grad, x, w, output_mask)
    as_conv = takes(x, w, stride, padding, dilation, transposed, groups, output_mask)
    own_input = not as_conv and input_grad_takes(x, w, stride, padding, dilation, transposed, groups, output_mask)
    own_weight = weight_grad_takes(x, w, transposed, groups, output_mask)
    by_taps = not own_weight and depthwise.takes(x, w, transposed, groups, output_mask)
    if not as_conv and not own_input and not own_weight and not by_taps:
        args = (grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask)
        return otherwise(*args) if otherwise is not None else NotImplemented
    gx = gw = gb = None
    if as_conv:
        flipped = aten.transpose.int(aten.flip.default(w, [2, 3]), 0, 1)
        gx = aten.convolution.default(grad, flipped, None, [1, 1], [2 - p for p in padding], [1, 1], False, [0, 0], 1)
    elif own_input:
        gx = input_grad(grad, x, w, padding, dilation)
    if own_weight:
        gw = weight_grad(grad, x, w, stride, padding, dilation)
    elif by_taps:
        gx, gw = depthwise.backward(grad, x, w, stride, padding, dilation, output_mask[0])
    if own_weight or by_taps:
        if output_mask[2]:
            gb = aten.sum.dim_IntList(grad, [0, *range(2, grad.dim())])
    own = (as_conv or own_input or gx is not None, own_weight or by_taps, own_weight or by_taps)
    rest = [asked and not done for asked, done in zip(output_mask, own)]
    if any(rest):
        left = aten.convolution_backward.default(grad, x, w, bias_sizes, stride, padding, dilation, transposed,
                                                 output_padding, groups, rest)
        gx, gw, gb = (mine if mine is not None else theirs for mine, theirs in zip((gx, gw, gb), left))
    return gx, gw, gb
