"""The weight gradient of a dense conv on tessera's own kernel, as an op of the backward graph:

    _, gw, gb = convolution_backward(dy, x, w, [C_out], stride, padding, dilation, False, [0, 0], 1,
                                     [False, True, True])
    // traced as (``conv_backward.convolution_backward``)
    gw = tessera.conv_weight_grad(dy, x, [C_out, C_in, 3, 3], stride, padding, dilation, channels_last=True)
    gb = sum(dy, [0, 2, 3])

    %gw = tsr.aten_call "tessera.conv_weight_grad.default"(%dy, %x) {args = [...]} : (...) -> tensor<64x64x3x3xf32>

On a CPU the op runs ``targets/x86/conv/weight_grad.py``'s kernel (a GEMM over
pixels per tap at the conv kernel's register tiling: 1.1-4.2x oneDNN's weight
gradient on 3x3 and 7x7 convs, BENCHMARKS.md session 28), ATen's
``convolution_backward`` where the host has no conv vector path, the tensors
are not float32 or the kernel would need too much stack (``weight_grad.STACK_BYTES``). ``channels_last`` is the layout of the result, fixed when the
graph is traced: ATen's (channels-last where the input or the weight is), so the op's
meta and its kernel agree whatever layouts the program gives its operands.
Which convs it takes: :func:`takes`.
"""

from __future__ import annotations

import functools
import math

import torch

from .conv_grads import aten_gradient, in_kernel_layout, in_layout, is_channels_last
from .targets.x86.conv.errors import ConvOperandMismatch, InvalidConvSpec
from .targets.x86.conv_choice import host_isa


def takes(x: torch.Tensor, w: torch.Tensor, transposed: bool, groups: int, output_mask) -> bool:
    """Whether the weight gradient of this conv is traced as ``tessera.conv_weight_grad``:
    a dense (one group), not transposed 2-D or 3-D float32 conv on a CPU with a window of
    more than one tap. The input's sizes may be symbolic (a kernel is loaded per size
    when run). A 1x1 conv's weight gradient is one GEMM, where oneDNN's was faster (1.30
    against 1.58 ms at 8x64->256 16x16)."""
    if transposed or groups != 1 or not output_mask[1] or x.dim() not in (4, 5) or w.dim() != x.dim():
        return False
    if x.device.type != "cpu" or x.dtype != torch.float32 or w.dtype != torch.float32:
        return False
    if not all(isinstance(s, int) for s in w.shape):
        return False
    return math.prod(w.shape[2:]) > 1 and host_isa() is not None


def _conv_weight_grad(dy: torch.Tensor, x: torch.Tensor, weight_size: list[int], stride: list[int],
                      padding: list[int], dilation: list[int], channels_last: bool) -> torch.Tensor:
    """``convolution_backward(dy, x, w, ...)``'s weight gradient, ``w`` of ``weight_size``: on
    the kernel, ``dy`` and ``x`` read in their layouts (channels-last or contiguous;
    a tensor of other strides is copied contiguous)."""
    isa = host_isa()
    if isa is None or dy.dtype != torch.float32 or x.dtype != torch.float32 or x.device.type != "cpu":
        return _aten_weight_grad(dy, x, weight_size, stride, padding, dilation, channels_last)
    dy, dy_layout = in_kernel_layout(dy)
    x, x_layout = in_kernel_layout(x)
    try:
        kernel, spec = _kernel(tuple(x.shape), tuple(weight_size), tuple(stride), tuple(padding), tuple(dilation),
                               channels_last, x_layout, dy_layout, isa, torch.get_num_threads())
    except InvalidConvSpec:  # a conv the kernel does not take at these sizes (its stack): the library's
        return _aten_weight_grad(dy, x, weight_size, stride, padding, dilation, channels_last)
    if tuple(dy.shape) != spec.conv.output_shape():
        raise ConvOperandMismatch(f"conv weight gradient: dy of shape {tuple(dy.shape)} for a conv whose output "
                                  f"is {spec.conv.output_shape()}")
    out = torch.empty_strided(spec.weight_shape(), spec.weight_strides())
    kernel.launch_trusted([dy, x, out])
    return out


conv_weight_grad = torch.library.custom_op("tessera::conv_weight_grad", _conv_weight_grad, mutates_args=())

HOST_FUNCTIONS = {"tessera.conv_weight_grad.default": _conv_weight_grad}
"""What a host program calls for each of tessera's ops: the function itself, not
through the dispatcher (a custom op's Python dispatch cost 0.1 ms a call, as much as
the kernel of a small conv)."""


@conv_weight_grad.register_fake
def _(dy, x, weight_size, stride, padding, dilation, channels_last):
    return in_layout(x.new_empty(weight_size), channels_last)


def _aten_weight_grad(dy, x, weight_size, stride, padding, dilation, channels_last) -> torch.Tensor:
    return aten_gradient(dy, x, x.new_empty(weight_size), stride, padding, dilation, 1, channels_last)


@functools.lru_cache(maxsize=256)
def _kernel(x_shape, weight_size, stride, padding, dilation, channels_last, x_layout, dy_layout, isa, threads):
    """The loaded kernel of one weight gradient, and its spec (``threads``: kernels load per thread count)."""
    from .targets.x86.conv.spec import ConvSpec
    from .targets.x86.conv.weight_grad import WgradSpec, load_wgrad

    conv = ConvSpec(x_shape[0], x_shape[1], weight_size[0], x_shape[2:], weight_size[2:], stride, padding, dilation,
                    isa=isa, input_layout=x_layout, output_layout=dy_layout)
    spec = WgradSpec(conv, "channels_last" if channels_last else "contiguous")
    return load_wgrad(spec), spec


def weight_grad(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, stride, padding, dilation) -> torch.Tensor:
    """The traced call, its result in ATen's layout (channels-last where the input or the weight is)."""
    channels_last = is_channels_last(x) or is_channels_last(w)
    return torch.ops.tessera.conv_weight_grad(grad, x, list(w.shape), list(stride), list(padding), list(dilation),
                                              channels_last)
