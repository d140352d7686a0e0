"""``tsr.conv`` on tessera's own kernel, where the cost model prefers it.

    step = tessera_or_library_conv(op, OneDnnConv(op))   # the host program's call for one tsr.conv
    y = step(x, w, b)                                     # x, y channels-last f32, grad disabled

:class:`TesseraConv` runs a ``tsr.conv`` whose input and result are
channels-last f32 through ``conv_channels_last``, the weight packed once per
weight version (``PackedWeight``, like ``OneDnnConv``'s oneDNN reorder); the
kernel is built on the first call (compile cache). Calls it cannot take
(autograd on, another device or dtype, other strides) go to the library call
it was given. ``compiler/conv_kernel_model.py`` decides which convs get it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects.builtin import f32

from tessera.compiler.codegen.conv.api import conv_channels_last
from tessera.compiler.codegen.conv.isa import CONV_ISAS, can_run_conv
from tessera.compiler.codegen.conv.packing import pack_weight
from tessera.compiler.codegen.conv.spec import ConvSpec, channels_last_strides
from tessera.compiler.conv_kernel_model import prefers_tessera
from tessera.compiler.conv_layout_model import ConvShape
from tessera.compiler.interpreter.impls import ConvEpilogue
from tessera.compiler.weight_cache import PackedWeight
from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, layout_of
from tessera.dialects.tsr.shapes import elem_of, ints


def _host_isa() -> str | None:
    return next((isa for isa in CONV_ISAS if can_run_conv(isa)), None)


def wants_tessera(op: tsr.ConvOp) -> bool:
    """A channels-last f32 2-D/3-D conv of a class the cost model gives tessera, on a CPU that runs the kernel."""
    rank = len(op.input.type.get_shape())
    return (rank in (4, 5) and _host_isa() is not None
            and layout_of(op.input.type) == channels_last(rank) and layout_of(op.result.type) == channels_last(rank)
            and elem_of(op.result.type) == f32 and prefers_tessera("x86", ConvShape.of(op)))


class TesseraConv:
    __name__ = "tessera_conv"

    def __init__(self, op: tsr.ConvOp, library: Callable[..., torch.Tensor]):
        x, w = op.input.type.get_shape(), op.weight.type.get_shape()
        self.stride, self.padding, self.dilation = ints(op.stride), ints(op.padding), ints(op.dilation)
        self.groups = op.groups.value.data
        self.spec = ConvSpec(x[0], x[1], w[0], tuple(x[2:]), tuple(w[2:]), self.stride, self.padding, self.dilation,
                             self.groups, bias=op.bias is not None, residual=op.residual_input is not None,
                             activation=op.activation_name() or "none", isa=_host_isa() or "avx2")
        self.epilogue = ConvEpilogue.of(op)
        self.activation = op.activation_name() or "none"
        self.strides = channels_last_strides(self.spec.input_shape())
        self.weight = PackedWeight(lambda w: pack_weight(w.detach().float().contiguous(), self.spec))
        self.library = library

    def _takes(self, x: torch.Tensor, w: torch.Tensor) -> bool:
        return (not torch.is_grad_enabled() and x.device.type == "cpu" and x.dtype == torch.float32
                and w.dtype == torch.float32 and tuple(x.shape) == self.spec.input_shape()
                and all(s == e or n == 1 for s, e, n in zip(x.stride(), self.strides, x.shape)))

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        b, r = self.epilogue.split(operands)
        if not self._takes(x, w) or (r is not None and r.dtype != torch.float32):
            return self.library(x, w, *operands)
        return conv_channels_last(x, self.weight(w), b, r, activation=self.activation, stride=self.stride,
                                  padding=self.padding, dilation=self.dilation, groups=self.groups)


def tessera_or_library_conv(op: tsr.ConvOp, library: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """``op``'s host call: :class:`TesseraConv` where :func:`wants_tessera`, else ``library``."""
    return TesseraConv(op, library) if wants_tessera(op) else library
