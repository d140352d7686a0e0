"""What the graph passes ask of a target, registered by the target itself.

Passes know no target by name: ``assign-layouts{target=x86}`` looks the name up
here, and each target of the registry (``compiler/targets/<name>``) registers
its :class:`TargetModels` when the registry is imported (as a function giving
them, called on first use: importing the registry loads no pass and no IR).

- ``conv_layouts``: the layout cost model of convolutions, contiguous or
  channels-last per dtype and shape class, asked once per ``tsr.conv`` by
  ``assign-layouts``. A table is a list of (shape class, measured speedup of
  channels-last) tried in order; the first class that matches decides. A class
  goes channels-last when the library's channels-last kernel was measured at
  least ``MIN_GAIN`` faster: below that, the relayouts an isolated conv needs
  at its boundaries cost more than the conv gains. Every table ends in a
  catch-all. The tables and their measurements are in each target's folder.
- ``conv_backward_layouts``: the same for the library's conv backward (a
  training backward's ``aten.convolution_backward``), asked by ``assign-layouts``.
- ``own_conv_kernel``: which implementation of the target's own conv kernel
  would compute a given ``tsr.conv`` for given features, if any
  (``select-impl`` records it; ``fold-relayouts-into-convs`` and
  ``fuse-conv-residuals`` rewrite a conv only where it would); absent: never.
- ``own_gemm_kernel``: likewise for ``tsr.int_mm``/``tsr.scaled_int_mm`` and the
  target's own int8 GEMM (``select-impl`` records it); absent: the library's.

    register_target_models("x86", lambda: TargetModels(conv_layouts=(Rule("f32 conv2d", lambda c: True, 1.15),)))
    prefers_channels_last("x86", ConvShape.of(conv))   # True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_GAIN = 1.10

PER_CALL_WEIGHT_BOUND = 16
"""Where weights are packed on every call (no ``freezing``), a conv whose weight
has more than this many times the elements of its output is weight-bound:
reordering or packing its weight per call costs more than the conv, so it goes
to the call that reads the plain weight (ATen's ``convolution``, eager's own).
Measured (``bench/conv_default_calls.py``, BENCHMARKS.md session 9, 1 thread): a 3x3
512->512 conv at 7x7 (ratio 94) takes 8.4 ms through oneDNN's call with a plain weight
and 2.4 ms through ATen's NCHW call, at 2x2 (1152) 8.0 against 0.8 ms; at ratios up to
12 (3x3 256->256 at 14x14) the calls are within 10% of each other."""


DYNAMIC_WEIGHT_LIMIT = 1 << 16
"""At dynamic sizes (no output to weigh against), a weight of up to this many
elements is packed or folded per call: a pass over at most 256 KB, tens of
microseconds. A larger one may be weight-bound (ResNet-50's deep layers:
0.26-2.4 M elements): the library's call decides per call (``OneDnnConv``)."""


def weight_bound(conv: Any) -> bool:
    """Whether packing ``conv``'s weight per call outweighs the conv (:data:`PER_CALL_WEIGHT_BOUND`);
    at dynamic sizes, whether its weight has more than :data:`DYNAMIC_WEIGHT_LIMIT` elements."""
    from tessera.dialects.tsr.shapes import is_static, shape_of

    weight, out = math.prod(shape_of(conv.weight.type)), shape_of(conv.result.type)
    return outweighs(weight, math.prod(out)) if is_static(out) else weight > DYNAMIC_WEIGHT_LIMIT


def outweighs(weight: int, output: int) -> bool:
    """A weight of ``weight`` elements outweighs an output of ``output`` (:data:`PER_CALL_WEIGHT_BOUND`)."""
    return weight > PER_CALL_WEIGHT_BOUND * output


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
    points: int | None = None
    """Output points per image (the product of the output's spatial sizes; None where one is dynamic)."""

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
        from tessera.dialects.tsr.shapes import elem_of, ints, is_static, numel, shape_of

        w = shape_of(op.weight.type)
        space = shape_of(op.result.type)[2:]
        points = numel(space) if is_static(space) else None
        return cls(spatial=len(w) - 2, dtype=str(elem_of(op.input.type)), in_channels=shape_of(op.input.type)[1],
                   out_channels=w[0], groups=op.groups.value.data, kernel=tuple(w[2:]), stride=tuple(ints(op.stride)),
                   points=points)


@dataclass(frozen=True)
class Rule:
    """A shape class and its measured speedup (here: channels-last over
    contiguous, or the vendor's guidance; a target's own conv kernel over the
    library's)."""

    what: str
    applies: Callable[[ConvShape], bool]
    speedup: float


def first_rule(rules: Sequence[Rule], conv: ConvShape) -> Rule | None:
    """The first rule of a table whose class ``conv`` is in."""
    return next((rule for rule in rules if rule.applies(conv)), None)


def any_conv(c: ConvShape) -> bool:
    """The class of every conv (a table's catch-all)."""
    return True


def rule_for(target: str, conv: ConvShape) -> Rule:
    rule = first_rule(target_models(target).conv_layouts, conv)
    if rule is None:
        raise LookupError(f"no layout rule of target {target} matches {conv}")  # every table ends in a catch-all
    return rule


def prefers_channels_last(target: str, conv: ConvShape) -> bool:
    return rule_for(target, conv).speedup >= MIN_GAIN


def table_prefers_channels_last(table: Sequence[Rule] | None, conv: ConvShape) -> bool | None:
    """Whether ``conv`` runs channels-last by a layout table (None: no table, or no rule for it)."""
    rule = first_rule(table, conv) if table is not None else None
    return None if rule is None else rule.speedup >= MIN_GAIN


def backward_prefers_channels_last(target: str, conv: ConvShape) -> bool | None:
    """Whether the library's backward of ``conv`` runs channels-last (None: the
    target has no table, and its operands stay as they come)."""
    return table_prefers_channels_last(target_models(target).conv_backward_layouts, conv)


@dataclass(frozen=True)
class TargetModels:
    conv_layouts: tuple[Rule, ...]
    own_conv_kernel: Callable[[Any, str | None, bool], str | None] | None = None
    """``own_conv_kernel(conv, features, freezing)``: the implementation of the target's own
    kernel that would compute this ``tsr.conv`` for these features (``None``: the host's),
    weights packed once (``freezing``) or on every call, or None where the library should."""
    own_gemm_kernel: Callable[[Any, str | None], str | None] | None = None
    """``own_gemm_kernel(op, features)``: the same for an int8 GEMM (``tsr.int_mm``, ``tsr.scaled_int_mm``)."""
    own_conv_rows: Callable[[int, int, int], tuple[int, int]] | None = None
    """``own_conv_rows(m, k, n)``: ``(H, W)`` of the image (``H * W = m``) that the target's own
    conv kernel computes best as a 1x1 conv of ``m`` rows of ``k`` f32 inputs by a ``k x n``
    weight (``addmm-as-conv``); None: one row of ``m`` pixels."""
    conv_backward_layouts: tuple[Rule, ...] | None = None
    """The layout table of the library's conv backward (``aten.convolution_backward``), like
    ``conv_layouts`` (the :class:`ConvShape` of the forward conv, ``points`` those of its
    output); None: its operands stay in the layouts they come in."""
    keeps_upsampled_conv: Callable[[Any, str | None, bool], bool] | None = None
    """``keeps_upsampled_conv(conv, features, freezing)``: whether the target computes this
    ``tsr.conv`` of a nearest-upsampled tensor faster as it is than as the polyphase conv of the
    small tensor (``fold-upsample-into-conv``; x86: Winograd from 128 channels in and out); None: never."""
    library_pools_channels_last: bool = False
    """Whether the library's max pools that give indices, and their backward, kept as ATen
    calls (``assign-layouts.LIBRARY_POOLS``), get channels-last operands and results."""


_MODELS: dict[str, Callable[[], TargetModels]] = {}


def register_target_models(target: str, models: Callable[[], TargetModels]) -> None:
    """Registers the function giving ``target``'s models (called once, on first use)."""
    _MODELS[target] = functools.cache(models)


def target_models(target: str) -> TargetModels:
    """The models of ``target``; a ``ValueError`` (a bad pass option) naming the known ones."""
    models = _MODELS.get(target)
    if models is None:
        raise ValueError(f"target must be one of {', '.join(sorted(_MODELS)) or '(none registered)'}, got '{target}'")
    return models()


def known_targets() -> tuple[str, ...]:
    return tuple(sorted(_MODELS))


@dataclass(frozen=True)
class KernelQuery:
    """What a pass asks a target's models about its own kernels: for the CPU of
    ``features`` (None: this host's), with weights packed once (``freezing``) or
    on every call."""

    target: str
    features: str | None = None
    freezing: bool = False

    def own_conv(self, conv: Any) -> str | None:
        """The implementation of the target's own kernel for ``conv``, or None (the library)."""
        chooser = target_models(self.target).own_conv_kernel
        return chooser(conv, self.features, self.freezing) if chooser is not None else None

    def keeps_upsampled_conv(self, conv: Any) -> bool:
        """:attr:`TargetModels.keeps_upsampled_conv` (False where the target has no such model)."""
        model = target_models(self.target).keeps_upsampled_conv
        return model is not None and model(conv, self.features, self.freezing)

    def own_gemm(self, op: Any) -> str | None:
        chooser = target_models(self.target).own_gemm_kernel
        return chooser(op, self.features) if chooser is not None else None

    def own_conv_rows(self, m: int, k: int, n: int) -> tuple[int, int]:
        """``(H, W)`` of the 1x1 conv image of ``m`` rows (:attr:`TargetModels.own_conv_rows`)."""
        rows = target_models(self.target).own_conv_rows
        return rows(m, k, n) if rows is not None else (1, m)
