"""``aten.convolution_backward`` as tessera traces it on a CPU, each gradient where it
is computed fastest:

    convolution_backward(dy, x, w, [C_out], stride=1, padding=p, ..., mask=[True, True, True])
    // traced as
    gx = tessera.conv_input_grad(dy, w, padding=p, ...)     // conv_input_grad.py
    gw = tessera.conv_weight_grad(dy, x, ...)               // conv_weight_grad.py
    gb = sum(dy, [0, 2, 3])

- a 1x1 conv that is one GEMM (``conv_sizes.is_one_gemm``): two GEMMs over its pixels
  (:func:`pointwise_backward`);
- the input gradient of a stride-1 dense conv: ``tessera.conv_input_grad``, which reads
  the weight flipped and transposed as it packs it (Winograd where the x86 model's
  per-call rule gives it, else tessera's direct kernel; the library's where the weight
  outweighs ``dx``);
- the weight gradient: ``tessera.conv_weight_grad`` (``conv_weight_grad.takes``), or a
  depthwise one tap by tap (``depthwise_backward.takes``);
- the rest: the decomposition ``otherwise`` (Inductor's), or the op whole.

Until session 40 a 3x3 input gradient in Winograd's class was traced as the conv of
``transpose(flip(w))``: the flip ran on the host on every call (``prims.rev``, ~80 us
for 64->64 inside a training step) and the transform copied the transposed view again.
"""

from __future__ import annotations

import torch

from tessera.dialects.conv_sizes import is_one_gemm

from . import depthwise_backward as depthwise
from .conv_input_grad import input_grad
from .conv_input_grad import takes as input_grad_takes
from .conv_weight_grad import takes as weight_grad_takes
from .conv_weight_grad import weight_grad

aten = torch.ops.aten


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
    with its input gradient as ``tessera.conv_input_grad`` where ``conv_input_grad.takes``, and its weight gradient as
    ``tessera.conv_weight_grad`` where ``conv_weight_grad.takes``, or by taps where
    ``depthwise_backward.takes`` (the bias's then a sum of ``grad``); elsewhere the
    decomposition ``otherwise`` (Inductor's), or the op whole."""
    if pointwise_takes(x, w, stride, padding, transposed, groups):
        return pointwise_backward(grad, x, w, output_mask)
    own_input = input_grad_takes(x, w, stride, padding, dilation, transposed, groups, output_mask)
    own_weight = weight_grad_takes(x, w, transposed, groups, output_mask)
    by_taps = not own_weight and depthwise.takes(x, w, transposed, groups, output_mask)
    if not own_input and not own_weight and not by_taps:
        args = (grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask)
        return otherwise(*args) if otherwise is not None else NotImplemented
    gx = gw = gb = None
    if own_input:
        gx = input_grad(grad, x, w, padding, dilation)
    if own_weight:
        gw = weight_grad(grad, x, w, stride, padding, dilation)
    elif by_taps:
        gx, gw = depthwise.backward(grad, x, w, stride, padding, dilation, output_mask[0])
    if own_weight or by_taps:
        if output_mask[2]:
            gb = aten.sum.dim_IntList(grad, [0, *range(2, grad.dim())])
    own = (own_input or gx is not None, own_weight or by_taps, own_weight or by_taps)
    rest = [asked and not done for asked, done in zip(output_mask, own)]
    if any(rest):
        left = aten.convolution_backward.default(grad, x, w, bias_sizes, stride, padding, dilation, transposed,
                                                 output_padding, groups, rest)
        gx, gw, gb = (mine if mine is not None else theirs for mine, theirs in zip((gx, gw, gb), left))
    return gx, gw, gb
