"""The input gradient of a stride-1 dense conv on tessera's own kernel, as an op of the backward graph:

    gx, gw, gb = convolution_backward(dy, x, w, [C_out], stride=1, padding=p, dilation=d, False, [0, 0], 1,
                                      [True, True, True])
    // traced as (``conv_backward.convolution_backward``)
    gx = tessera.conv_input_grad(dy, w, padding=p, dilation=d, channels_last=False)
    gw = tessera.conv_weight_grad(dy, x, ...)

    %gx = tsr.aten_call "tessera.conv_input_grad.default"(%dy, %w) {args = [...]}
          : (tensor<8x64x8x8xf32, #tsr.layout<nchw>>, tensor<64x32x3x3xf32, #tsr.layout<nchw>>)
          -> tensor<8x32x8x8xf32, #tsr.layout<nchw>>

At stride 1 the input gradient is a conv of ``dy`` padded by ``d*(k-1) - p`` with the
weight flipped and transposed, ``W[i, o, t] = w[o, i, K-1-t]``. The kernel's weight
packing reads ``w`` that way (``ConvSpec.flipped_weight``), so neither the flip nor
the transpose is written out: per call the packing kernel (or the conv kernel itself,
a block at a time, ``tiling.packs_in_kernel``) and the conv. ``dy`` and ``gx`` are
read and written in their layouts (channels-last or contiguous). Against oneDNN's
input gradient on this Xeon (1 thread, batch 8, BENCHMARKS.md session 35): 64->64 3x3
at 8x8 0.21 against 0.28 ms, 32->3 at 16x16 0.04 against 0.08-0.18 ms; where the
weight outweighs ``dx`` (``target_models.outweighs``: 256->256 at 4x4, 512->512 at 2x2)
the library's stays. Which convs: :func:`takes`; the rest of the op: ATen's. At symbolic
sizes, where the op is traced for every conv of its class, it makes the static choices
when run: a size whose weight outweighs ``dx`` gets the library's input gradient, ``dy``
in the layout of the x86 backward table (ResNet-18's 512->512 3x3 at 2x2, batch 8: 1.9
ms contiguous against 2.7 on the kernel and 7.2 channels-last), and a 3x3 conv at a size
where the per-call rule gives Winograd runs Winograd F(m x m, 3 x 3), its weight
transform reading ``w`` flipped and transposed (``ConvSpec.flipped_weight``: no copy).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import torch

from tessera.passes.target_models import ConvShape, outweighs

from .conv_grads import aten_gradient, in_kernel_layout, in_layout, is_channels_last
from .targets.x86.conv.errors import ConvOperandMismatch, InvalidConvSpec
from .targets.x86.conv_choice import host_isa


def takes(x: torch.Tensor, w: torch.Tensor, stride, padding, dilation, transposed, groups, output_mask) -> bool:
    """Whether the input gradient of this conv is traced as ``tessera.conv_input_grad``: a
    dense (one group), not transposed, stride-1 2-D or 3-D float32 conv on a CPU with a
    vector path, a window of more than one tap (a 1x1 conv's is one GEMM), padding at
    most the window's reach, and a weight that does not outweigh ``dx``. At symbolic
    sizes every one (a kernel is loaded per size): the library's input gradient then
    gets channels-last operands of unknown planes, 1.6-3.8x slower on small ones, and
    ResNet-18's dynamic training step ran 151 -> 120 ms so (with ``conv_backward.takes``
    leaving large weights; eager 119-126, session 36)."""
    if transposed or groups != 1 or not output_mask[0] or x.dim() not in (4, 5) or w.dim() != x.dim():
        return False
    if x.device.type != "cpu" or x.dtype != torch.float32 or w.dtype != torch.float32 or host_isa() is None:
        return False
    if not all(isinstance(s, int) for s in (*w.shape, x.shape[1])) or math.prod(w.shape[2:]) == 1:
        return False
    if any(len(v) != x.dim() - 2 for v in (stride, padding, dilation)):  # one size for every dim: ATen's to expand
        return False
    if any(s != 1 for s in stride) or any(p > d * (k - 1) for p, d, k in zip(padding, dilation, w.shape[2:])):
        return False
    return not all(isinstance(s, int) for s in x.shape) or not outweighs(w.numel(), x.numel())


def _conv_input_grad(dy: torch.Tensor, w: torch.Tensor, padding: list[int], dilation: list[int],
                     channels_last: bool) -> torch.Tensor:
    """``convolution_backward(dy, x, w, stride=1, ...)``'s input gradient (``x``'s sizes follow
    from ``dy``'s: :func:`_input_size`): on the kernel, the result ``channels_last`` or contiguous."""
    isa = host_isa()
    if isa is None or dy.dtype != torch.float32 or w.dtype != torch.float32 or dy.device.type != "cpu":
        return _aten_input_grad(dy, w, padding, dilation, channels_last)
    if outweighs(w.numel(), math.prod(_input_size(dy, w, padding, dilation))):  # traced at symbolic sizes
        return _aten_input_grad(in_layout(dy, _library_channels_last(dy, w)), w, padding, dilation, channels_last)
    winograd = _winograd(tuple(dy.shape), tuple(w.shape), tuple(padding), tuple(dilation), isa,
                         torch.get_num_threads())
    if winograd is not None:  # traced at symbolic sizes, run at a size with enough tiles
        conv, pack, spec = winograd
        out = torch.empty_strided(spec.output_shape(), spec.output_strides())
        conv.launch_trusted([in_layout(dy, True), pack(w.detach().contiguous()), out])
        return in_layout(out, channels_last)
    dy, dy_layout = in_kernel_layout(dy)
    try:
        kernel, pack, spec = _kernel(tuple(dy.shape), tuple(w.shape), tuple(padding), tuple(dilation), dy_layout,
                                     channels_last, isa, torch.get_num_threads())
    except InvalidConvSpec:  # a conv the kernel does not take at these sizes: the library's
        return _aten_input_grad(dy, w, padding, dilation, channels_last)
    if dy.shape[1] != w.shape[0]:  # the launch is trusted: its operands are checked here
        raise ConvOperandMismatch(f"conv input gradient: dy of {dy.shape[1]} channels for a weight of shape "
                                  f"{tuple(w.shape)}")
    w = w.detach().contiguous()
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    kernel.launch_trusted([dy, w if pack is None else pack(w), out])
    return out


conv_input_grad = torch.library.custom_op("tessera::conv_input_grad", _conv_input_grad, mutates_args=())

HOST_FUNCTIONS = {"tessera.conv_input_grad.default": _conv_input_grad}
"""What a host program calls for the op: the function itself (``conv_weight_grad.HOST_FUNCTIONS``)."""


@conv_input_grad.register_fake
def _(dy, w, padding, dilation, channels_last):
    return in_layout(dy.new_empty(_input_size(dy, w, padding, dilation)), channels_last)


def _input_size(dy, w, padding, dilation) -> list:
    """The shape of ``x``: at stride 1 each spatial size is ``dy``'s plus ``d*(k-1) - 2p``."""
    reach = [d * (k - 1) - 2 * p for p, d, k in zip(padding, dilation, w.shape[2:])]
    return [dy.shape[0], w.shape[1], *(s + r for s, r in zip(dy.shape[2:], reach))]


def _library_channels_last(dy: torch.Tensor, w: torch.Tensor) -> bool:
    """Whether the library's input gradient of this size runs channels-last, by the x86
    backward table (``conv_layouts.CONV_BACKWARD_LAYOUTS``), as ``assign-layouts`` decides
    at static sizes."""
    from .targets.x86.conv_layouts import backward_channels_last

    shape = ConvShape(spatial=w.dim() - 2, dtype="f32", in_channels=w.shape[1], out_channels=w.shape[0], groups=1,
                      kernel=tuple(w.shape[2:]), stride=(), points=math.prod(dy.shape[2:]))
    return backward_channels_last(shape)


def _aten_input_grad(dy, w, padding, dilation, channels_last) -> torch.Tensor:
    x = dy.new_empty(_input_size(dy, w, padding, dilation))
    return aten_gradient(dy, x, w, [1] * len(padding), padding, dilation, 0, channels_last)


@functools.lru_cache(maxsize=256)
def _kernel(dy_shape, w_shape, padding, dilation, dy_layout, channels_last, isa, threads):
    """The loaded kernel of one input gradient, its weight packer (None where the kernel
    packs the weight itself) and its spec (``threads``: kernels load per thread count)."""
    from .targets.x86.conv.api import load_conv, weight_packer
    from .targets.x86.conv.spec import ConvSpec
    from .targets.x86.conv.tiling import packs_in_kernel

    kernel_size = w_shape[2:]
    spec = ConvSpec(dy_shape[0], w_shape[0], w_shape[1], dy_shape[2:], kernel_size, 1,
                    tuple(d * (k - 1) - p for p, d, k in zip(padding, dilation, kernel_size)), dilation, isa=isa,
                    input_layout=dy_layout, output_layout="channels_last" if channels_last else "contiguous",
                    flipped_weight=True)
    if packs_in_kernel(spec):
        spec = dataclasses.replace(spec, packs_weight=True)
        return load_conv(spec), None, spec
    return load_conv(spec), weight_packer(spec), spec


@functools.lru_cache(maxsize=256)
def _winograd(dy_shape, w_shape, padding, dilation, isa, threads):
    """Winograd F(m x m, 3 x 3) of the conv ``dy -> dx`` where the per-call rule gives it at these
    sizes (``conv_choice.winograd_m_per_call_at``: enough channels and tiles): the conv, its
    per-call packer of ``w`` (read flipped and transposed), and its spec; else None."""
    from .targets.x86.conv.spec import ConvSpec
    from .targets.x86.conv.winograd import WinogradConv, WinogradPacker
    from .targets.x86.conv.winograd_spec import WinogradSpec, winograd_fits
    from .targets.x86.conv_choice import winograd_m_per_call_at

    if len(w_shape) != 4 or w_shape[2:] != (3, 3) or any(d != 1 for d in dilation):
        return None
    spec = ConvSpec(dy_shape[0], w_shape[0], w_shape[1], dy_shape[2:], (3, 3), 1, tuple(2 - p for p in padding),
                    isa=isa, input_layout="channels_last", output_layout="channels_last", flipped_weight=True)
    m = winograd_m_per_call_at(spec) if winograd_fits(spec) else None
    if m is None:
        return None
    return WinogradConv(spec, m), WinogradPacker(WinogradSpec(spec, m)).per_call(), spec


def input_grad(grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, padding, dilation) -> torch.Tensor:
    """The traced call, its result in ATen's layout (channels-last where the input or the weight is)."""
    channels_last = is_channels_last(x) or is_channels_last(w)
    return torch.ops.tessera.conv_input_grad(grad, w, list(padding), list(dilation), channels_last)
