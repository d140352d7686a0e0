"""The vendor-library calls CPU and GPU targets share: the callables the host
program (``host_program.py``) puts in its ``Call`` steps for library ops
(``Target.host_call``; a target's own kernels are in its folder).

    OneDnnConv(op)(x, w, b)   # tsr.conv on a CPU: oneDNN, weight packed once per version, activation as a post-op
    MklLinear(op)(b, x, wt)   # tsr.addmm on a CPU: MKL's packed GEMM
    AtenConv(op)(x, w, b)     # tsr.conv on a GPU: ATen (cuDNN)

Each falls back to ATen (reference semantics) for tensors its library does
not take, so a call is always right.
"""

from __future__ import annotations

import copy
import functools
import math
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from tessera.dialects.conv_sizes import conv_output_size, is_one_gemm
from tessera.passes.target_models import outweighs, weight_bound

from .conv_epilogue import ConvEpilogue
from .weight_cache import PackedWeight

REFERENCE_CPU = types.SimpleNamespace(device=torch.device("cpu"))
"""What the reference semantics (``interpreter.impls``) read of their interpreter, on the CPU."""


ONEDNN_POST_OPS = {None: "none", "silu": "swish"}
"""``tsr.conv``'s activations that oneDNN applies as post-ops of
``mkldnn._convolution_pointwise``. Its ``relu`` and ``hardtanh`` post-ops
(and ``relu`` after a residual ``add``) turn NaN into 0 where eager keeps it;
those activations run after the call, in place (:data:`IN_PLACE_ACTIVATIONS`)."""

REORDERED_SIZES = 4
"""Input sizes per conv whose reordered weight a dynamic program under freezing keeps
(a static program per size, Dynamo's alternative, keeps one each, up to 8 sizes)."""


def _relu6_(y: torch.Tensor) -> torch.Tensor:
    return y.clamp_(0.0, 6.0)


IN_PLACE_ACTIVATIONS = {"relu": torch.relu_, "relu6": _relu6_, "silu": F.silu}
"""The activations applied to a library conv's result after the call (NaN stays NaN)."""


class OneDnnConv:
    """oneDNN's convolution for one ``tsr.conv``, in the layout the passes chose.

    Channels-last: with ``freezing``, the weight reordered once into the
    blocked format oneDNN computes with (as Inductor does under freezing) and
    kept while it is unchanged (:class:`PackedWeight`), so a parameter updated
    in place is packed again; without, oneDNN reorders the plain weight on
    each call. The pointwise call computes and returns channels-last whatever
    the input, so a contiguous conv takes the plain
    ``mkldnn_convolution`` instead (weight reordered per call: the call
    ``bench/conv_layouts.py`` measures for the layout cost model), which
    returns the contiguous result its type names. Without ``freezing`` a conv
    whose weight outweighs its output (``target_models.weight_bound``; at
    dynamic sizes, decided per call) takes ATen's NCHW call, which reads the
    plain weight. Under freezing at dynamic sizes, the weight is reordered per
    input size, the last :data:`REORDERED_SIZES` kept (oneDNN's blocked format
    depends on the input's sizes). The residual is a binary
    ``add`` post-op on the packed call; SiLU a post-op where no residual comes
    before it; other activations run after the call, in place (oneDNN's turn
    NaN into 0). Tensors oneDNN does not take (bf16 on a CPU without its bf16
    path), and autograd, go through ATen's dispatch."""

    def __init__(self, op: Any, freezing: bool = False):
        from tessera.dialects.tsr.layout import channels_last, layout_of
        from tessera.dialects.tsr.shapes import ints, is_static

        self.epilogue = ConvEpilogue.of(op)
        self.stride, self.padding = ints(op.stride), ints(op.padding)
        self.dilation, self.groups = ints(op.dilation), op.groups.value.data
        activation = op.activation_name()
        self.post_op = ONEDNN_POST_OPS.get(activation, "none")
        self.after = None if activation in ONEDNN_POST_OPS else IN_PLACE_ACTIVATIONS[activation]
        self.input_size = list(op.input.type.get_shape())
        self.packed = layout_of(op.result.type) == channels_last(len(self.input_size))
        # at dynamic sizes, with the weight read each call, weight-bound or not is decided per call
        self.bound_per_call = not freezing and not is_static(op.result.type.get_shape())
        self.weight_bound = not freezing and not self.bound_per_call and weight_bound(op)
        self.kernel = tuple(op.weight.type.get_shape()[2:])
        self.pointwise = is_one_gemm(self.kernel, self.stride, self.padding, self.groups)
        self.freezing = freezing
        self.weight: Callable[[torch.Tensor], torch.Tensor] | None = (
            None if freezing and not is_static(self.input_size) else self._packer(self.input_size))
        """The weight as every call reads it; None: reordered per input size (:attr:`_per_size`)."""
        self._per_size: dict[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]] = {}
        """Under freezing at dynamic sizes: input size -> its reordered weight, least recently used first."""
        self._bound_at: dict[tuple, bool] = {}  # input and weight sizes -> weight-bound there
        self.__name__ = "onednn_conv"

    def _packer(self, input_size: list[int]) -> Callable[[torch.Tensor], torch.Tensor]:
        """The weight as the call reads it: reordered for inputs of ``input_size``
        under freezing (:class:`PackedWeight`), else the plain weight."""
        if not self.freezing:
            return _plain
        return PackedWeight(functools.partial(
            _reorder_conv_weight, padding=self.padding, stride=self.stride, dilation=self.dilation,
            groups=self.groups, input_size=input_size), self.freezing)

    def _weight(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``w`` as the call reads it for ``x``. At dynamic sizes, reordered for ``x``'s
        sizes: a weight reordered for another size runs, but oneDNN reorders it again
        inside every call (8x8 WAN decode under freezing: convs 4.45 -> 5.10 ms with the
        weights of a 12x12 call)."""
        if self.weight is not None:
            return self.weight(w)
        return self._packer_at(tuple(x.shape))(w)

    def _packer_at(self, key: tuple[int, ...]) -> Callable[[torch.Tensor], torch.Tensor]:
        """The weight's packer for inputs of sizes ``key``, the last :data:`REORDERED_SIZES` kept."""
        packer = self._per_size.get(key)
        if packer is None:
            packer = self._per_size[key] = self._packer(list(key))
            if len(self._per_size) > REORDERED_SIZES:
                del self._per_size[next(iter(self._per_size))]
        elif next(reversed(self._per_size)) != key:  # the most recent last
            self._per_size[key] = self._per_size.pop(key)
        return packer

    def at_sizes(self, args: Sequence[Any]) -> OneDnnConv:
        """This conv for arguments placed as ``args`` (a program bound to one run's
        sizes: ``host_steps.SizedCall``): at dynamic sizes, weight-bound or not and
        the reordered weight settled for the input's sizes, not looked up per call.
        It stays right for any input (a choice of speed only)."""
        x, w = args[0], args[1]
        if x is None or w is None or not (self.bound_per_call or self.weight is None):
            return self
        bound = copy.copy(self)
        if self.bound_per_call:
            bound.bound_per_call, bound.weight_bound = False, self._weight_bound_at(x.shape, w.shape)
        if self.weight is None:
            bound.weight = self._packer_at(tuple(x.shape))
        return bound

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        b, r = self.epilogue.split(operands)
        if (self.weight_bound or self.bound_per_call and self._weight_bound_at(x.shape, w.shape)) and x.device.type == "cpu":
            return self._on_plain_weight(x, w, b, r)
        if x.device.type == "cpu" and x.dtype in _ONEDNN_DTYPES and not torch.is_grad_enabled():
            if self.packed and r is None:  # SiLU as a oneDNN post-op: applied before the result is stored
                y = torch.ops.mkldnn._convolution_pointwise(
                    x, self._weight(x, w), b, self.padding, self.stride, self.dilation, self.groups, self.post_op,
                    [], "")
                return y if self.after is None else self.after(y)
            if self.packed:  # the residual as a binary post-op (oneDNN reads it in any layout)
                y = torch.ops.mkldnn._convolution_pointwise.binary(
                    x, r, self._weight(x, w), b, self.padding, self.stride, self.dilation, self.groups, "add", None,
                    None, [], "")
                return self.epilogue.apply(y)
            return self.epilogue.apply(torch.ops.aten.mkldnn_convolution(
                x, w, b, self.padding, self.stride, self.dilation, self.groups), r)
        return self.epilogue.apply(torch.ops.aten.convolution(
            x, w, b, self.stride, self.padding, self.dilation, False, [0] * len(self.stride), self.groups), r)

    def _weight_bound_at(self, x: Sequence[int], w: Sequence[int]) -> bool:
        """``target_models.weight_bound`` for input and weight sizes ``x`` and ``w`` (decided once per size)."""
        key = (tuple(x), tuple(w))
        bound = self._bound_at.get(key)
        if bound is None:
            spatial = map(conv_output_size, x[2:], self.kernel, self.stride, self.padding, self.dilation)
            bound = outweighs(math.prod(w), w[0] * x[0] * math.prod(max(0, n) for n in spatial))
            if len(self._bound_at) >= 64:
                self._bound_at.clear()
            self._bound_at[key] = bound
        return bound

    def _on_plain_weight(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None,
                         r: torch.Tensor | None) -> torch.Tensor:
        """A weight-bound conv on the plain weight: a 1x1 conv as the GEMM it is
        (:func:`pointwise_gemm`), another as ATen's NCHW convolution (its
        channels-last call was measured up to 4x slower on such convs:
        ``bench/conv_default_calls.py``); a result in the other layout is copied
        (a weight-bound conv's output is small)."""
        if self.pointwise:
            y = self.epilogue.apply(pointwise_gemm(x, w, b), r)
        else:
            y = self.epilogue.apply(torch.ops.aten.convolution(
                x.contiguous(), w, b, self.stride, self.padding, self.dilation, False, [0] * len(self.stride),
                self.groups), r)
        return y.contiguous(memory_format=_CHANNELS_LAST[y.dim()] if self.packed else torch.contiguous_format)


def pointwise_gemm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """A stride-1 unpadded dense 1x1 (1x1x1) conv as one GEMM on the plain weight
    ``w[C_out, C_in]``: over channels-last rows (views) where ``x`` is channels-last,
    its result channels-last; else per image, ``w @ x[n]``, its result contiguous.

        y = pointwise_gemm(x, w, b)   # x: 8x960x2x2 channels-last -> addmm(b, x_rows[32, 960], w.t())

    ATen's NCHW convolution took such a conv to its unblocked path: 960->160 at 2x2,
    batch 8, 1.48 ms against 0.12 for the GEMM (1 thread, AMD EPYC, session 39)."""
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    w2 = w.reshape(w.shape[0], c)
    last = (0, *range(2, x.dim()), 1)
    if x.permute(last).is_contiguous():
        rows = x.permute(last).reshape(n * math.prod(spatial), c)
        y = torch.addmm(b, rows, w2.t()) if b is not None else rows @ w2.t()
        return y.view(n, *spatial, w2.shape[0]).permute(0, x.dim() - 1, *range(1, x.dim() - 1))
    y = torch.matmul(w2, x.reshape(n, c, math.prod(spatial)))
    if b is not None:
        y = y + b[:, None]
    return y.view(n, w2.shape[0], *spatial)


class AtenConv:
    """``tsr.conv`` on a GPU: ATen's convolution (cuDNN on CUDA) in the layout the passes chose."""

    def __init__(self, op: Any):
        from tessera.dialects.tsr.shapes import ints

        self.epilogue = ConvEpilogue.of(op)
        self.args = (ints(op.stride), ints(op.padding), ints(op.dilation), False, [0] * len(ints(op.stride)),
                     op.groups.value.data)
        self.__name__ = "aten_conv"

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        b, r = self.epilogue.split(operands)
        return self.epilogue.apply(torch.ops.aten.convolution(x, w, b, *self.args), r)


class MklLinear:
    """``tsr.addmm`` (a linear layer, ``bias + x @ w.t()``): with ``freezing``,
    MKL's packed GEMM on the CPU, the weight packed once per weight version, as
    Inductor's freezing does; ATen's ``addmm`` where that does not apply (no
    freezing: packing per call costs as much as the GEMM; another device or dtype, a bias that is not one full row, an empty GEMM, autograd on, no MKL)."""

    def __init__(self, op: Any, freezing: bool = False):
        self.rows = op.lhs.type.get_shape()[0]
        self.freezing = freezing
        self.weight = PackedWeight(functools.partial(_reorder_linear_weight, rows=self.rows), freezing)
        self.__name__ = "mkl_linear"

    def _takes(self, bias: torch.Tensor, a: torch.Tensor, wt: torch.Tensor) -> bool:
        return (self.freezing and _HAS_MKL and not torch.is_grad_enabled() and a.device.type == "cpu"
                and a.dtype == wt.dtype == bias.dtype == torch.float32
                and a.dim() == 2 and a.shape[0] == self.rows and a.shape[1] > 0 and wt.shape[1] > 0
                and bias.shape == (wt.shape[1],))  # MKL reads a full bias row; K = 0 is ATen's

    def __call__(self, bias: torch.Tensor, a: torch.Tensor, wt: torch.Tensor) -> torch.Tensor:
        if not self._takes(bias, a, wt):
            return torch.addmm(bias, a, wt)
        return torch.ops.mkl._mkl_linear(a.contiguous(), self.weight(wt), wt.t(), bias, self.rows)


def _plain(w: torch.Tensor) -> torch.Tensor:
    return w


def _reorder_conv_weight(w: torch.Tensor, padding, stride, dilation, groups, input_size) -> torch.Tensor:
    """A conv weight in oneDNN's blocked format (as Inductor's freezing packs it)."""
    return torch.ops.mkldnn._reorder_convolution_weight(w, padding, stride, dilation, groups, input_size)


def _reorder_linear_weight(wt: torch.Tensor, rows: int) -> torch.Tensor:
    """A linear layer's weight in MKL's packed format, for GEMMs of ``rows`` rows."""
    return torch.ops.mkl._mkl_reorder_linear_weight(wt.t(), rows)


_CHANNELS_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}

_HAS_MKL = torch._C.has_mkl and hasattr(torch.ops.mkl, "_mkl_linear")
_HAS_MKLDNN = torch.backends.mkldnn.is_available()
_ONEDNN_DTYPES = (() if not _HAS_MKLDNN else
                  (torch.float32, torch.bfloat16) if torch.ops.mkldnn._is_mkldnn_bf16_supported() else (torch.float32,))
"""The dtypes oneDNN's conv takes on this CPU (its bf16 path needs AVX-512 or AVX-NE-CONVERT)."""


def cpu_library_call(op, freezing: bool = False):
    """The library call of ``op`` on a CPU (``CpuTarget.host_call``), or None."""
    from tessera.dialects import tsr

    if isinstance(op, tsr.ConvOp):
        return OneDnnConv(op, freezing)
    if isinstance(op, tsr.AddmmOp):
        return MklLinear(op, freezing)
    return None


def gpu_library_call(op):
    """The library call of ``op`` on a GPU (``GpuTarget.host_call``), or None."""
    from tessera.dialects import tsr

    return AtenConv(op) if isinstance(op, tsr.ConvOp) else None
