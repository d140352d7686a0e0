"""What one channels-last fp32 convolution kernel computes: a frozen, hashable description.

    ConvSpec(batch=1, in_channels=96, out_channels=96, input_size=(5, 26, 26), kernel=(3, 3, 3))
    ConvSpec(2, 32, 32, (17, 17), (3, 3), stride=2, padding=1, groups=32, bias=True, activation="silu")

computes ``act(conv(x, w) + bias + residual)`` like ``torch.nn.functional.conv2d``
/ ``conv3d`` followed by ``+ residual`` and the activation (each optional), for
``x`` of logical shape ``[N, C_in, (D,) H, W]`` stored channels-last
(``NHWC``/``NDHWC`` strides) and an output in the same layout, or either one
contiguous (``input_layout``/``output_layout``, dense convs). Sizes are static:
one kernel per shape, like the library's primitive descriptors.

Activations: ``relu``, ``relu6`` (``min(max(x, 0), 6)``), ``silu`` (``x * sigmoid(x)``), ``gelu`` (erf, torch's
default) and ``gelu_tanh`` (``approximate="tanh"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from tessera.compiler.targets.x86.conv.errors import InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import get_conv_isa
from tessera.dialects.conv_sizes import conv_output_size
from tessera.dialects.dim_orders import channels_last, identity, outputs_last, strides_for

WEIGHT_LAYOUTS = {"contiguous": identity, "dhwio": outputs_last}
"""How a kernel that packs its weight (``ConvSpec.packs_weight``) may find it stored."""

ACTIVATIONS = ("none", "relu", "relu6", "silu", "gelu", "gelu_tanh")
LAYOUTS = {"channels_last": channels_last, "contiguous": identity}
"""How the kernel's input and output may be stored, and each one's dim order (``tsr.layout``)."""
DTYPES = ("float32",)


def _positive(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _tuple(name: str, v: object, n: int, minimum: int) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) and not isinstance(v, bool) else tuple(v) if isinstance(v, (tuple, list)) else None
    if t is None or len(t) != n or not all(isinstance(x, int) and not isinstance(x, bool) and x >= minimum for x in t):
        raise InvalidConvSpec(f"conv kernel {name} must be an int or {n} ints >= {minimum}, got {v!r}")
    return t


@dataclass(frozen=True)
class ConvSpec:
    batch: int
    in_channels: int
    out_channels: int
    input_size: tuple[int, ...]
    """Spatial size of the input: ``(H, W)`` or ``(D, H, W)``."""
    kernel: tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] = 0
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = False
    residual: bool = False
    activation: str = "none"
    isa: str = "avx512"
    dtype: str = "float32"
    input_layout: str = "channels_last"
    """How ``x`` is stored: ``channels_last`` (NHWC/NDHWC), or ``contiguous``
    (NCHW/NCDHW, dense convs only: the kernel broadcasts input scalars, so it reads
    either layout, and a relayout before the conv is folded into it)."""
    output_layout: str = "channels_last"
    """How ``out`` (and the residual) are stored: ``channels_last``, or ``contiguous``
    (dense convs only: a tile's channel vectors go through a scratch tile and are
    written one channel row of pixels at a time; a relayout after the conv folded in)."""
    packs_weight: bool = False
    """The kernel takes the plain weight ``[C_out, C_in/groups, (kd,) kh, kw]``
    (contiguous) and packs each channel block on its stack as it reaches the
    block (dense convs, channel blocks outermost: ``kernel.py``), where a weight
    packed per call (no ``freezing``) would be written out and read back whole."""
    weight_layout: str = "contiguous"
    """How such a plain weight is stored (:data:`WEIGHT_LAYOUTS`): ``contiguous`` (OIHW), or
    ``dhwio``, output channels innermost (GPT-2's ``Conv1D`` weight ``[K, N]`` as a 1x1 conv's)."""
    flipped_weight: bool = False
    """The weight given is that of the conv whose input gradient this conv computes
    (stride 1): ``w`` of ``[C_in, C_out, k...]`` (this conv's channels swapped),
    contiguous, read flipped and transposed as it is packed: ``W[o, i, t] = w[i, o, K-1-t]``
    (``conv_input_grad.py``). No flip or transpose is ever written out. Of several
    groups, each group's channels are swapped: ``w`` of ``[C_in, C_out/groups, k...]``
    (the Winograd GEMM of such a conv, one group per point: ``winograd.transform_weight``)."""

    def __post_init__(self) -> None:
        for name in ("batch", "in_channels", "out_channels", "groups"):
            if not _positive(getattr(self, name)):
                raise InvalidConvSpec(f"conv kernel {name} must be a positive int, got {getattr(self, name)!r}")
        size = self.input_size
        if not isinstance(size, (tuple, list)) or len(size) not in (2, 3):
            raise InvalidConvSpec(f"conv kernel input_size must be (H, W) or (D, H, W), got {size!r}")
        n = len(size)
        set_ = object.__setattr__
        set_(self, "input_size", _tuple("input_size", size, n, 1))
        set_(self, "kernel", _tuple("kernel", self.kernel, n, 1))
        set_(self, "stride", _tuple("stride", self.stride, n, 1))
        set_(self, "padding", _tuple("padding", self.padding, n, 0))
        set_(self, "dilation", _tuple("dilation", self.dilation, n, 1))
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise InvalidConvSpec(f"conv kernel groups={self.groups} must divide in_channels={self.in_channels} "
                                  f"and out_channels={self.out_channels}")
        if self.activation not in ACTIVATIONS:
            raise InvalidConvSpec(f"unknown conv epilogue activation {self.activation!r}; known: {', '.join(ACTIVATIONS)}")
        if self.dtype not in DTYPES:
            raise InvalidConvSpec(f"conv kernels compute float32 only, not {self.dtype!r}")
        if not isinstance(self.bias, bool) or not isinstance(self.residual, bool):
            raise InvalidConvSpec("conv kernel bias and residual are bools (whether the kernel takes them)")
        get_conv_isa(self.isa)
        for what in ("input_layout", "output_layout"):
            if getattr(self, what) not in LAYOUTS:
                raise InvalidConvSpec(f"conv kernel {what} must be one of {', '.join(LAYOUTS)}, "
                                      f"got {getattr(self, what)!r}")
        if (self.input_layout, self.output_layout) != ("channels_last",) * 2 and self.depthwise:
            raise InvalidConvSpec("a depthwise conv kernel reads and writes channels-last only (channels are its vector lanes)")
        if self.packs_weight and self.depthwise:
            raise InvalidConvSpec("a depthwise conv kernel reads its weight packed (packs_weight is for dense convs)")
        if self.weight_layout not in WEIGHT_LAYOUTS or (self.weight_layout != "contiguous" and not self.packs_weight):
            raise InvalidConvSpec(f"conv kernel weight_layout must be one of {', '.join(WEIGHT_LAYOUTS)}, and other "
                                  f"than contiguous only where the kernel packs its weight; got {self.weight_layout!r}")
        if self.flipped_weight and self.weight_layout != "contiguous":
            raise InvalidConvSpec("a flipped weight is a plain contiguous weight")
        for i, (s, k, p, d) in enumerate(zip(self.input_size, self.kernel, self.dims("padding"), self.dims("dilation"))):
            if s + 2 * p < d * (k - 1) + 1:
                raise InvalidConvSpec(f"conv kernel window {d * (k - 1) + 1} is larger than the padded input "
                                      f"{s + 2 * p} along spatial dim {i}")

    # -- derived sizes ---------------------------------------------------------------
    @property
    def spatial_dims(self) -> int:
        return len(self.input_size)

    def dims(self, what: str) -> tuple[int, ...]:
        """``stride``/``padding``/``dilation``/``kernel``/``input_size`` as one int per
        spatial dim (``__post_init__`` made them tuples)."""
        return cast(tuple[int, ...], getattr(self, what))

    @property
    def output_size(self) -> tuple[int, ...]:
        return tuple(map(conv_output_size, self.input_size, self.kernel, self.dims("stride"), self.dims("padding"),
                         self.dims("dilation")))

    def as3d(self, what: str) -> tuple[int, int, int]:
        """``input_size``/``output_size``/``kernel``/``stride``/``padding``/``dilation``
        as three dims (a 2-D conv is a 3-D one with depth 1)."""
        v = self.output_size if what == "output_size" else self.dims(what)
        a, b, *c = v if len(v) == 3 else ((0 if what == "padding" else 1), *v)
        return a, b, c[0]

    @property
    def cin_g(self) -> int:
        return self.in_channels // self.groups

    @property
    def cout_g(self) -> int:
        return self.out_channels // self.groups

    @property
    def depthwise(self) -> bool:
        """One input channel per output channel (``groups == C_in == C_out``)."""
        return self.groups > 1 and self.groups == self.in_channels == self.out_channels

    def input_strides(self) -> tuple[int, ...]:
        """Element strides of ``x`` (``[N, C_in, *spatial]`` stored ``input_layout``)."""
        shape = self.input_shape()
        return strides_for(shape, LAYOUTS[self.input_layout](len(shape)))

    def output_strides(self) -> tuple[int, ...]:
        """Element strides of ``out`` and the residual (stored ``output_layout``)."""
        shape = self.output_shape()
        return strides_for(shape, LAYOUTS[self.output_layout](len(shape)))

    @property
    def pixel_stride(self) -> int:
        """Elements between neighbouring input pixels along W."""
        return self.input_strides()[-1]

    @property
    def channel_stride(self) -> int:
        """Elements between neighbouring input channels."""
        return self.input_strides()[1]

    @property
    def out_pixel_stride(self) -> int:
        """Elements between neighbouring output pixels along W."""
        return self.output_strides()[-1]

    @property
    def out_channel_stride(self) -> int:
        """Elements between neighbouring output channels."""
        return self.output_strides()[1]

    @property
    def kernel_volume(self) -> int:
        return math.prod(self.kernel)

    @property
    def flops(self) -> int:
        """2 x multiply-adds of the convolution (the epilogue not counted)."""
        return 2 * self.batch * self.out_channels * math.prod(self.output_size) * self.cin_g * math.prod(self.kernel)

    def weight_shape(self) -> tuple[int, ...]:
        return (self.out_channels, self.cin_g, *self.kernel)

    def weight_strides(self) -> tuple[int, ...]:
        """Element strides of a plain weight stored ``weight_layout``."""
        shape = self.weight_shape()
        return strides_for(shape, WEIGHT_LAYOUTS[self.weight_layout](len(shape)))

    def plain_weight_shape(self) -> tuple[int, ...]:
        """The shape of the plain weight a packing reads: :meth:`weight_shape`, its
        each group's channels swapped where the weight is ``flipped_weight``."""
        return (self.in_channels, self.cout_g, *self.kernel) if self.flipped_weight else self.weight_shape()

    def plain_weight_strides(self) -> tuple[int, ...]:
        if self.flipped_weight:
            return strides_for(self.plain_weight_shape(), identity(self.spatial_dims + 2))
        return self.weight_strides()

    def input_shape(self) -> tuple[int, ...]:
        return (self.batch, self.in_channels, *self.input_size)

    def output_shape(self) -> tuple[int, ...]:
        return (self.batch, self.out_channels, *self.output_size)

    @property
    def kernel_name(self) -> str:
        dims = "x".join(map(str, self.input_size))
        k = "x".join(map(str, self.kernel))
        parts = [f"conv{self.spatial_dims}d_{self.isa}_n{self.batch}_{self.in_channels}to{self.out_channels}_{dims}_k{k}"]
        for name, default in (("stride", 1), ("padding", 0), ("dilation", 1)):
            v = getattr(self, name)
            if any(x != default for x in v):
                parts.append(name[0] + "x".join(map(str, v)))
        if self.groups > 1:
            parts.append(f"g{self.groups}")
        parts += [x for x, on in (("bias", self.bias), ("res", self.residual)) if on]
        if self.activation != "none":
            parts.append(self.activation)
        if self.input_layout != "channels_last":
            parts.append("xcontig")
        if self.output_layout != "channels_last":
            parts.append("ycontig")
        if self.packs_weight:
            parts.append("wplain" if self.weight_layout == "contiguous" else f"w{self.weight_layout}")
        if self.flipped_weight:
            parts.append("wflip")
        return "_".join(parts)
