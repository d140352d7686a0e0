"""The layout cost model of convolutions: contiguous or channels-last, per target,
dtype and shape class. ``assign-layouts`` asks it once per ``tsr.conv``.

The rule is a list of (shape class, layout, measured speedup of channels-last)
tried in order; the first class that matches decides. A class goes
channels-last when the library's channels-last kernel was measured at least
``MIN_GAIN`` faster: below that, the relayouts an isolated conv needs at its
boundaries cost more than the conv gains.

x86 (``bench/conv_layouts.py``, 2 threads, the machine of ``BENCHMARKS.md``).
A channels-last conv calls oneDNN's ``_convolution_pointwise`` with its weight
packed once; a contiguous one ``aten.mkldnn_convolution``, which reorders the
weight on every call (with a packed weight oneDNN computes and returns
channels-last whatever the input, so a contiguous conv cannot use one).
Speedup of the packed channels-last call over the contiguous one, per class::

    bf16 / f16, every conv2d and conv3d .......... 1.5x - 16x    channels-last
    f32 conv3d (3x3x3, 1x1x1, depthwise, C_in=3)   1.08x - 4.6x  channels-last
        (3x3x3 96->96: 1.08x-1.12x over runs; 64->64: 1.13x)
    f32 conv2d grouped, < 16 channels per group .. 1.08x         contiguous
    f32 conv2d 3x3, >= 128 input channels ........ 0.99x - 1.00x contiguous
    f32 conv2d otherwise (3x3 < 128 ch, 1x1,
        strided, first layers, depthwise,
        >= 16 channels per group) ................ 1.15x - 2.5x  channels-last

(Against the unpacked channels-last call, session 2: the same classes, within
a few percent.)

CUDA (cuDNN): tensor-core convolutions read NHWC/NDHWC natively for f16/bf16
(cuDNN's documented preference); f32 stays contiguous. Not measured here (no
GPU on this machine): the table is NVIDIA's guidance until a GPU run replaces it.

Metal (MPS): conv3d channels-last, conv2d contiguous, as MPSGraph's native
layouts; not measured here (no Apple GPU).

    >>> prefers_channels_last("x86", ConvShape(spatial=3, dtype="f32", in_channels=32,
    ...     out_channels=32, groups=1, kernel=(3, 3, 3), stride=(1, 1, 1)))
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MIN_GAIN = 1.10


@dataclass(frozen=True)
class ConvShape:
    """What the model looks at: the conv's class, not its exact sizes."""

    spatial: int  # 1, 2 or 3
    dtype: str  # "f32", "bf16", "f16", ...
    in_channels: int
    out_channels: int
    groups: int
    kernel: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.in_channels

    @property
    def channels_per_group(self) -> int:
        return self.in_channels // self.groups

    @property
    def half(self) -> bool:
        return self.dtype in ("bf16", "f16")

    @property
    def pointwise(self) -> bool:
        return all(k == 1 for k in self.kernel)

    @classmethod
    def of(cls, op) -> ConvShape:
        """The class of a ``tsr.conv``."""
        from tessera.dialects.tsr.shapes import elem_of, ints, shape_of

        w = shape_of(op.weight.type)
        return cls(spatial=len(w) - 2, dtype=str(elem_of(op.input.type)), in_channels=shape_of(op.input.type)[1],
                   out_channels=w[0], groups=op.groups.value.data, kernel=tuple(w[2:]), stride=tuple(ints(op.stride)))


@dataclass(frozen=True)
class Rule:
    """A shape class and its measured speedup (here: channels-last over
    contiguous, or the vendor's guidance; ``conv_kernel_model``: tessera's
    kernel over oneDNN's)."""

    what: str
    applies: Callable[[ConvShape], bool]
    speedup: float


def first_rule(rules: Sequence[Rule], conv: ConvShape) -> Rule | None:
    """The first rule of a table whose class ``conv`` is in."""
    return next((rule for rule in rules if rule.applies(conv)), None)


def _any(c: ConvShape) -> bool:
    return True


RULES: dict[str, tuple[Rule, ...]] = {
    "x86": (
        Rule("conv1d", lambda c: c.spatial == 1, 1.0),
        Rule("bf16/f16 conv", lambda c: c.half, 1.5),
        Rule("f32 conv3d", lambda c: c.spatial == 3, 1.13),
        Rule("f32 grouped conv2d, < 16 channels per group",
             lambda c: c.groups > 1 and not c.depthwise and c.channels_per_group < 16, 1.08),
        Rule("f32 dense 3x3 conv2d, >= 128 input channels",
             lambda c: c.groups == 1 and max(c.kernel) > 1 and max(c.stride) == 1 and c.in_channels >= 128, 1.00),
        Rule("f32 conv2d", _any, 1.15),
    ),
    "ptx": (
        Rule("conv1d", lambda c: c.spatial == 1, 1.0),
        Rule("f16/bf16 conv (tensor cores read NHWC)", lambda c: c.half, 1.5),
        Rule("f32 conv", _any, 1.0),
    ),
    "metal": (
        Rule("conv3d", lambda c: c.spatial == 3, 1.5),
        Rule("conv1d/conv2d", _any, 1.0),
    ),
}


def rule_for(target: str, conv: ConvShape) -> Rule:
    rule = first_rule(RULES[target], conv)
    if rule is None:
        raise LookupError(f"no layout rule of target {target} matches {conv}")  # every table ends in a catch-all
    return rule


def prefers_channels_last(target: str, conv: ConvShape) -> bool:
    return rule_for(target, conv).speedup >= MIN_GAIN
