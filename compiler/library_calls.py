"""How each library op of the host graph is called: the callables the host
program (``host_program.py``) puts in its ``Call`` steps.

    OneDnnConv(op)(x, w, b)   # tsr.conv: oneDNN, weight packed once per version, activation as a post-op
    AtenConv(op)(x, w, b)     # tsr.conv on a GPU: ATen (cuDNN)
    MklLinear(op)(b, x, wt)   # tsr.addmm: MKL's packed GEMM
    Int8Gemm(op)(a, b, ...)   # tsr.int_mm / tsr.scaled_int_mm: tessera's exact int8 GEMM

Each falls back to ATen (reference semantics) for tensors its library does
not take, so a call is always right.
"""

from __future__ import annotations

import types

import torch
from xdsl.dialects.builtin import i8

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, layout_of
from tessera.dialects.tsr.shapes import elem_of, ints

from .interpreter.impls import IMPLS, ConvEpilogue
from .weight_cache import PackedWeight

REFERENCE_CPU = types.SimpleNamespace(device=torch.device("cpu"))
"""What the reference semantics (``interpreter.impls``) read of their interpreter, on the CPU."""


ONEDNN_ACTIVATIONS = {None: ("none", []), "relu": ("relu", []), "relu6": ("hardtanh", [0.0, 6.0]), "silu": ("swish", [])}
"""``tsr.conv``'s activations as oneDNN post-ops (``mkldnn._convolution_pointwise``): name, scalars."""

ONEDNN_ACTIVATIONS_AFTER_ADD = {None: None, "relu": "relu"}
"""The activations oneDNN applies after a residual add post-op
(``mkldnn._convolution_pointwise.binary`` refuses the others; those run after the call)."""


class OneDnnConv:
    """oneDNN's convolution for one ``tsr.conv``, in the layout the passes chose.

    Channels-last: the weight reordered once into the blocked format oneDNN
    computes with (as Inductor does under freezing) and kept while it is
    unchanged (:class:`PackedWeight`), so a parameter updated in place is
    packed again. With a packed weight oneDNN computes and returns
    channels-last whatever the input, so a contiguous conv takes the plain
    ``mkldnn_convolution`` instead (weight reordered per call: the call
    ``bench/conv_layouts.py`` measures for the layout cost model), which
    returns the contiguous result its type names. The op's residual and
    activation are oneDNN post-ops on the packed call (a binary ``add``, then
    the activation where oneDNN takes it after one), else applied after the
    conv. Tensors oneDNN does not take, and autograd, go through ATen's dispatch."""

    def __init__(self, op: tsr.ConvOp):
        self.epilogue = ConvEpilogue.of(op)
        self.stride, self.padding = ints(op.stride), ints(op.padding)
        self.dilation, self.groups = ints(op.dilation), op.groups.value.data
        self.activation, self.scalars = ONEDNN_ACTIVATIONS[op.activation_name()]
        self.input_size = list(op.input.type.get_shape())
        self.packed = layout_of(op.result.type) == channels_last(len(self.input_size))
        self.weight = PackedWeight(lambda w: torch.ops.mkldnn._reorder_convolution_weight(
            w, self.padding, self.stride, self.dilation, self.groups, self.input_size))
        self.__name__ = "onednn_conv"

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        b, r = self.epilogue.split(operands)
        if x.device.type == "cpu" and x.dtype in (torch.float32, torch.bfloat16) and _HAS_MKLDNN and not torch.is_grad_enabled():
            if self.packed and r is None:  # the activation as a oneDNN post-op: applied before the result is stored
                return torch.ops.mkldnn._convolution_pointwise(
                    x, self.weight(w), b, self.padding, self.stride, self.dilation, self.groups, self.activation,
                    self.scalars, "")
            if self.packed:  # the residual as a binary post-op (oneDNN reads it in any layout)
                return self._with_residual(x, self.weight(w), b, r)
            return self.epilogue.apply(torch.ops.aten.mkldnn_convolution(
                x, w, b, self.padding, self.stride, self.dilation, self.groups), r)
        return self.epilogue.apply(torch.ops.aten.convolution(
            x, w, b, self.stride, self.padding, self.dilation, False, [0] * len(self.stride), self.groups), r)

    def _with_residual(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, r: torch.Tensor) -> torch.Tensor:
        fused = self.epilogue.activation in ONEDNN_ACTIVATIONS_AFTER_ADD
        y = torch.ops.mkldnn._convolution_pointwise.binary(
            x, r, w, b, self.padding, self.stride, self.dilation, self.groups, "add", None,
            ONEDNN_ACTIVATIONS_AFTER_ADD.get(self.epilogue.activation), [], "")
        return y if fused else self.epilogue.apply(y)  # the activation oneDNN refuses after an add


class AtenConv:
    """``tsr.conv`` on a GPU: ATen's convolution (cuDNN on CUDA) in the layout the passes chose."""

    def __init__(self, op: tsr.ConvOp):
        self.epilogue = ConvEpilogue.of(op)
        self.args = (ints(op.stride), ints(op.padding), ints(op.dilation), False, [0] * len(ints(op.stride)),
                     op.groups.value.data)
        self.__name__ = "aten_conv"

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        b, r = self.epilogue.split(operands)
        return self.epilogue.apply(torch.ops.aten.convolution(x, w, b, *self.args), r)


class MklLinear:
    """``tsr.addmm`` (a linear layer, ``bias + x @ w.t()``) through MKL's packed
    GEMM on the CPU, the weight packed once per weight version, as Inductor's
    freezing does; ATen's ``addmm`` where that does not apply (another device
    or dtype, a bias that is not one row, autograd on, no MKL)."""

    def __init__(self, op: tsr.AddmmOp):
        self.rows = op.lhs.type.get_shape()[0]
        self.weight = PackedWeight(lambda wt: torch.ops.mkl._mkl_reorder_linear_weight(wt.t(), self.rows))
        self.__name__ = "mkl_linear"

    def _takes(self, bias: torch.Tensor, a: torch.Tensor, wt: torch.Tensor) -> bool:
        return (_HAS_MKL and not torch.is_grad_enabled() and a.device.type == "cpu"
                and a.dtype == wt.dtype == bias.dtype == torch.float32
                and a.dim() == 2 and a.shape[0] == self.rows and bias.dim() == 1)

    def __call__(self, bias: torch.Tensor, a: torch.Tensor, wt: torch.Tensor) -> torch.Tensor:
        if not self._takes(bias, a, wt):
            return torch.addmm(bias, a, wt)
        return torch.ops.mkl._mkl_linear(a.contiguous(), self.weight(wt), wt.t(), bias, self.rows)


_HAS_MKL = torch._C.has_mkl and hasattr(torch.ops.mkl, "_mkl_linear")
_HAS_MKLDNN = torch.backends.mkldnn.is_available()


class Int8Gemm:
    """``tsr.int_mm`` and ``tsr.scaled_int_mm`` through tessera's exact int8 GEMM
    (``codegen/int8_gemm``, the host's fastest of AVX-512 VNNI, AVX-VNNI, AVX2)
    with B packed once per weight (:class:`PackedWeight`) and, for
    ``scaled_int_mm``, the scale/bias epilogue in the GEMM's stores; the
    reference semantics through ATen where that path cannot run (another
    device, a CPU without AVX2)."""

    def __init__(self, op: tsr.IntMmOp | tsr.ScaledIntMmOp):
        from .codegen.int8_gemm import can_run, int8_mm, pack_b_kernel, select_isa

        isa = select_isa()
        self.isa = isa if can_run(isa) else None
        a_signed = elem_of(op.lhs.type) == i8
        self.weight = PackedWeight(lambda b: pack_b_kernel(b.contiguous(), self.isa, a_signed))
        self._int8_mm = int8_mm
        self._reference = lambda *xs, op=op: IMPLS[type(op)](op, REFERENCE_CPU, *xs)
        self.__name__ = "tessera_int8_gemm"

    def __call__(self, a: torch.Tensor, b: torch.Tensor, *epilogue: torch.Tensor) -> torch.Tensor:
        if self.isa is None or a.device.type != "cpu":
            return self._reference(a, b, *epilogue)
        return self._int8_mm(a.contiguous(), self.weight(b), *epilogue, isa=self.isa)
