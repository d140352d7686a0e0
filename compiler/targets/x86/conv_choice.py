"""Which ``tsr.conv`` tessera's x86 conv kernel computes, and on which vector path:
the x86 target's ``own_conv_kernel`` model, asked by ``select-impl`` (which
records the answer on the op) and by the passes that shape convs for the kernel.

    kernel_isa(conv, "+avx512f")      # "avx512": the kernel computes it, on zmm
    kernel_isa(conv, "+avx2,+fma")    # "avx2"
    kernel_isa(conv, None)            # this host's widest path, or None (no AVX2 and FMA)
    kernel_isa(bf16_conv, None)       # None: the library (oneDNN) computes it
    kernel_isa(conv_512x512_7x7, None, freezing=False)   # "avx512": the kernel packs its weight block by block
    kernel_isa(conv_512x512_of_dynamic_sizes, None, freezing=False)   # "avx512": likewise, a kernel per size
    kernel_isa(conv_of_dynamic_sizes, None)         # as for its channels and kernel: a kernel per size
    kernel_isa(conv3x3_64x64_56x56, None, freezing=True)   # "avx512:winograd4": Winograd F(4x4, 3x3)
    kernel_isa(conv3x3_64x64_of_dynamic_sizes, None, freezing=True)   # "avx512:winograd": m per size
    kernel_isa(conv3x3_64x64_56x56, None, freezing=False)  # "avx512:winograd4": 196 tiles pay for its weight's transform
    kernel_isa(conv3x3_128x128_of_dynamic_sizes, None, freezing=False)  # "avx512:winograd": m per size, else oneDNN
    split_impl("avx512:winograd4")    # ("avx512", 4); split_impl("avx512") == ("avx512", None)
    split_impl("avx512:winograd")     # ("avx512", PER_SIZE)

The kernel takes f32 2-D/3-D convs reading and writing channels-last or
contiguous tensors, of a class the measured cost model
(``conv_kernel_model.py``) gives it in those layouts. Imports no torch, so the
IR tools run the passes without it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tessera.dialects.conv_sizes import is_one_gemm
from tessera.passes.target_models import ConvShape, weight_bound

from .conv.errors import ConvIsaUnavailable, InvalidConvSpec
from .conv.isa import CONV_ISAS, can_run_conv, isa_of_features
from .conv.spec import LAYOUTS, WEIGHT_LAYOUTS, ConvSpec
from .conv.tiling import packs_in_kernel
from .conv.winograd_spec import WinogradSpec, winograd_fits
from .conv_kernel_model import prefers_tessera, prefers_winograd, prefers_winograd_per_call

if TYPE_CHECKING:  # the models are registered with the target, which loads no IR until a pass asks
    from xdsl.ir import SSAValue

    from tessera.dialects import tsr


def host_isa() -> str | None:
    """The widest conv kernel path this CPU runs, or None."""
    return next((isa for isa in CONV_ISAS if can_run_conv(isa)), None)


def _isa(features: str | None) -> str | None:
    if not features:
        return host_isa()
    try:
        return isa_of_features(features)
    except ConvIsaUnavailable:
        return None


def _layout_name(v: SSAValue, names: dict[str, Callable[[int], tuple[int, ...]]]) -> str | None:
    """The name in ``names`` (name -> dim order of a rank) of ``v``'s layout, or None."""
    from tessera.dialects.tsr.layout import layout_of
    from tessera.dialects.tsr.shapes import shape_of

    rank, layout = len(shape_of(v.type)), layout_of(v.type)
    return next((name for name, order in names.items() if layout == order(rank)), None)


def kernel_layout(v: SSAValue) -> str | None:
    """How the kernel would read or write ``v``: ``channels_last``, ``contiguous``, or ``None`` (it cannot)."""
    return _layout_name(v, LAYOUTS)


def weight_layout(v: SSAValue) -> str | None:
    """How a kernel that packs its weight would read ``v`` (``ConvSpec.weight_layout``):
    ``contiguous``, ``dhwio`` (output channels innermost), or ``None`` (a copy first)."""
    return _layout_name(v, WEIGHT_LAYOUTS)


WINOGRAD = ":winograd"


PER_SIZE = 0
"""Winograd's ``m`` of a conv of dynamic sizes: chosen per size (:func:`winograd_m_at`, ``conv/sized.py``)."""

ANY_TILES = sys.maxsize
"""Output tiles no size exceeds: the model asked whether a conv of dynamic sizes takes Winograd at any size."""


def split_impl(impl: str) -> tuple[str, int | None]:
    """A conv's ``tsr.impl``: its vector path, and ``m`` where Winograd F(m x m, 3 x 3)
    computes it (:data:`PER_SIZE`: ``m`` per size, or the direct kernel)."""
    isa, sep, m = impl.partition(WINOGRAD)
    return isa, (int(m) if m else PER_SIZE) if sep else None


def conv_spec(op: tsr.ConvOp, isa: str) -> ConvSpec:
    """The kernel spec of ``op`` (its epilogue: bias, residual, activation) on the
    vector path ``isa``; of dynamic sizes, at batch 1 and the smallest input the
    kernel and padding take (the spec whose sizes ``SizedConv`` sets per call)."""
    from tessera.dialects.tsr.shapes import ints, is_static

    x, w = op.input.type.get_shape(), op.weight.type.get_shape()
    if not is_static(x):
        smallest = (max(1, d * (k - 1) + 1 - 2 * p) for k, p, d in zip(w[2:], ints(op.padding), ints(op.dilation)))
        x = (1, x[1], *smallest)
    return ConvSpec(x[0], x[1], w[0], tuple(x[2:]), tuple(w[2:]), ints(op.stride), ints(op.padding),
                    ints(op.dilation), op.groups.value.data, bias=op.bias is not None,
                    residual=op.residual_input is not None, activation=op.activation_name() or "none",
                    isa=isa, input_layout=kernel_layout(op.input) or "channels_last",
                    output_layout=kernel_layout(op.result) or "channels_last")


def winograd_m_at(spec: ConvSpec) -> int | None:
    """``m`` of the Winograd F(m x m, 3 x 3) that computes a conv the Winograd
    kernels take at ``spec``'s sizes, or None (the direct kernel): the measured
    model's choice by its channels and 4x4 output tiles (``conv_kernel_model.prefers_winograd``).

        >>> winograd_m_at(ConvSpec(1, 64, 64, (56, 56), (3, 3), padding=1, isa="avx512"))
        4
        >>> winograd_m_at(ConvSpec(1, 512, 512, (7, 7), (3, 3), padding=1, isa="avx512")) is None
        True
    """
    return prefers_winograd(_shape(spec), _tiles(spec), spec.isa)


def winograd_m_per_call_at(spec: ConvSpec) -> int | None:
    """:func:`winograd_m_at` where the weight is transformed on every call (no freezing):
    ``conv_kernel_model.prefers_winograd_per_call`` by the 4x4 output tiles over the batch.

        >>> winograd_m_per_call_at(ConvSpec(1, 64, 64, (56, 56), (3, 3), padding=1, isa="avx2"))
        4
        >>> winograd_m_per_call_at(ConvSpec(1, 64, 64, (14, 14), (3, 3), padding=1, isa="avx2")) is None
        True
    """
    return prefers_winograd_per_call(_shape(spec), spec.batch * _tiles(spec), spec.isa)


def _tiles(spec: ConvSpec) -> int:
    """4x4 output tiles of an image (of a 3-D conv: of every output frame, each a GEMM row
    as a 2-D conv's tile is; ``winograd_spec``)."""
    ws = WinogradSpec(spec, 4)
    return ws.tiles * ws.frames[1]


def winograd_choice(freezing: bool) -> Callable[[ConvSpec], int | None]:
    """How Winograd's ``m`` is chosen at a conv's sizes (of dynamic sizes: at each
    size it runs at, ``conv/sized.py``): weights transformed once under ``freezing``, else per call."""
    return winograd_m_at if freezing else winograd_m_per_call_at


def direct_at(spec: ConvSpec) -> bool:
    """Whether a conv of dynamic sizes runs on the direct kernel at ``spec``'s sizes where
    Winograd leaves them and its weight is packed per call (``conv/sized.py``), as a static
    conv's rule in :func:`kernel_isa`: a weight the kernel packs block by block
    (``tiling.packs_in_kernel``) always, which the library would reorder whole on every
    call; else the model's class at that size's output points (3x3 stride 1 at most
    13x13 points: the direct kernel; larger: the library's call).

        >>> direct_at(ConvSpec(8, 64, 64, (8, 8), (3, 3), padding=1, isa="avx512"))
        True
        >>> direct_at(ConvSpec(8, 64, 64, (24, 24), (3, 3), padding=1, isa="avx512"))
        False
        >>> direct_at(ConvSpec(8, 256, 256, (24, 24), (3, 3), padding=1, isa="avx512"))
        True
    """
    if packs_in_kernel(spec):
        return True
    shape = dataclasses.replace(_shape(spec), points=math.prod(spec.output_size))
    return prefers_tessera("x86", shape, spec.input_layout, spec.output_layout)


def _shape(spec: ConvSpec) -> ConvShape:
    """The cost model's view of an f32 conv spec."""
    return ConvShape(spatial=spec.spatial_dims, dtype="f32", in_channels=spec.in_channels, out_channels=spec.out_channels,
                     groups=spec.groups, kernel=spec.kernel, stride=spec.dims("stride"))


def winograd_m(op: tsr.ConvOp, isa: str, freezing: bool) -> int | None:
    """``m`` of the Winograd F(m x m, 3 x 3) that computes ``op`` (an f32 conv of the
    kernel's layouts), or None: a conv that the Winograd kernels take
    (``winograd_spec.winograd_fits``), in a class the measured model gives it
    (:func:`winograd_m_at`). Its weight is transformed once under ``freezing``,
    else on every call: then only with enough output tiles to pay for that
    (``prefers_winograd_per_call``). A 3-D conv (``kt x 3 x 3``, a video model's) by the
    same rules, the tiles of all its output frames counted (``_tiles``): under freezing
    r3d_18's 3x3x3 convs at 8x112x112 2.0-2.7x faster than the direct kernel, oneDNN's
    6-8x (session 51); transformed per call, r3d_18 1.54x and the WAN 2.1 decoder 1.44x
    faster whole (session 52). Of dynamic sizes, :data:`PER_SIZE` where the
    model gives it Winograd at some size (its channels decide): the model's choice
    is made per size when the conv runs (:func:`winograd_choice`)."""
    from tessera.dialects.tsr.shapes import is_static

    if (op.groups.value.data != 1
            or kernel_layout(op.input) != "channels_last" or kernel_layout(op.result) != "channels_last"):
        return None  # what winograd_fits asks first: a depthwise conv of NCHW layouts has no kernel spec at all
    m = _winograd_m_of(conv_spec(op, isa), is_static(op.input.type.get_shape()), freezing)
    return PER_SIZE if m is not None and not is_static(op.input.type.get_shape()) else m


def _winograd_m_of(spec: ConvSpec, static: bool, freezing: bool) -> int | None:
    """``m`` of the Winograd the model gives a conv of the kernel's layouts at ``spec``'s sizes,
    or None; of dynamic sizes (not ``static``), ``m`` at unbounded tiles (the model's choice
    at some size)."""
    if not winograd_fits(spec):
        return None
    if not static:
        shape = _shape(spec)
        return (prefers_winograd(shape, ANY_TILES, spec.isa) if freezing
                else prefers_winograd_per_call(shape, ANY_TILES, spec.isa))
    return winograd_choice(freezing)(spec)


UPSAMPLED_WINOGRAD_CHANNELS = {2: 128, 3: 64}
"""Per spatial rank, the least channels in and out from which Winograd computes a 3x3 conv of
a 2x nearest-upsampled tensor faster than the polyphase conv of the small tensor does
(:func:`winograd_over_polyphase`)."""


def winograd_over_polyphase(op: tsr.ConvOp, features: str | None = None, freezing: bool = True) -> bool:
    """Whether Winograd computes ``op``, an f32 conv of a nearest-upsampled tensor, faster
    than the polyphase conv of the small tensor would (``fold-upsample-into-conv``): where the
    model gives it Winograd once channels-last (where ``assign-layouts`` puts a dense 3x3
    conv) and it has :data:`UPSAMPLED_WINOGRAD_CHANNELS` channels in and out. The polyphase conv
    does 0.47 of the 3x3 conv's multiply-adds, Winograd F(4x4) 0.25, but its speedup over
    the direct kernel is 1.2-2.3x, growing with the channels (``prefers_winograd``).
    Upsample 2x then 3x3 conv (SiLU before, tanh after), unfolded over folded, one process,
    AMD EPYC Zen 4, 1 thread (session 53)::

        2-D, C -> C at the small size   freezing   per call
        16, 32x32 .................... 0.63x      0.74x
        32, 32x32 ....................            0.70x
        64, 32x32 .................... 0.79x      0.79x
        64, 16x16 ....................            0.98x
        128, 32x32 ................... 1.19x      1.17x
        256, 16x16 ................... 1.67x
        256 -> 128, 32x32 ............ 1.04x
        384 -> 192, 16x16 ............ 1.61x
        128 -> 64, 32x32 ............. 0.83x
        3-D (1, 2, 2), 64, 4x32x32 ... 1.22x      1.12x   (examples/video_vae_block.py)
        SD decoder, 128-512, 32x32 latent  1.08x whole
        WAN 2.1 decoder, 32x32 latent, 1 frame  0.96x whole (its three: 384 -> 192 twice,
            192 -> 96; all unfolded then, not profiled)
    """
    from xdsl.dialects.builtin import f32

    from tessera.dialects.tsr.shapes import elem_of, is_static

    isa = _isa(features)
    spatial = len(op.input.type.get_shape()) - 2
    if (isa is None or op.groups.value.data != 1 or any(elem_of(v.type) != f32 for v in (op.input, op.weight))
            or min(op.input.type.get_shape()[1], op.weight.type.get_shape()[0])
            < UPSAMPLED_WINOGRAD_CHANNELS.get(spatial, sys.maxsize)):
        return False
    try:
        spec = dataclasses.replace(conv_spec(op, isa), input_layout="channels_last", output_layout="channels_last")
    except InvalidConvSpec:
        return False
    return _winograd_m_of(spec, is_static(op.input.type.get_shape()), freezing) is not None


def _packs_in_kernel(op: tsr.ConvOp, isa: str) -> bool:
    """A conv whose kernel packs its weight block by block where it is packed per call
    (``tiling.packs_in_kernel``: packed weights over L2, which no size changes; of dynamic
    sizes, each size's kernel, ``conv/sized.py``). Such a weight costs the
    library as much: oneDNN reorders it on every call, ATen's NCHW call reads it whole.
    Kernel with its packing against both, AVX2, 1 thread (``BENCHMARKS.md``, session 29):
    3x3 512 -> 512 at 7x7 5.71 ms against 8.26 (ATen NCHW) and 12.12 (oneDNN channels-last),
    1x1 2048 -> 512 at 7x7 2.83 against 2.94-3.32, 3x3 256 -> 256 at 14x14 5.22 against
    6.30-6.91, a linear of 128 rows 3072 -> 768 13.16 against MKL's 14.40."""
    try:
        return packs_in_kernel(conv_spec(op, isa))
    except InvalidConvSpec:  # a conv the kernel does not take in these layouts (depthwise, NCHW)
        return False


def gemm_per_size(op: tsr.ConvOp, freezing: bool) -> bool:
    """A 1x1 conv (stride 1, unpadded, one group: one GEMM) of dynamic sizes whose
    weight is packed per call (no ``freezing``): the kernel of each size weighs its
    weight against that size's output as a static conv does, and takes the library's
    GEMM where the weight outweighs it (``conv/sized.SizedConv``: a classifier's rows,
    the deep 1x1 convs of a small image, a squeeze-excite's). So no such weight is
    weight-bound at every size. Other convs of dynamic sizes keep the kernel at every
    size, as at static sizes, where it beat the library's calls on weight-bound convs."""
    from tessera.dialects.tsr.shapes import ints, is_static

    return (not freezing and not is_static(op.input.type.get_shape())
            and is_one_gemm(op.weight.type.get_shape()[2:], ints(op.stride), ints(op.padding), op.groups.value.data))


def kernel_isa(op: tsr.ConvOp, features: str | None = None, freezing: bool = True) -> str | None:
    """The vector path on which tessera's kernel computes ``op`` for ``features``
    (``None``: this host's), or None where the library should. Without
    ``freezing`` its weight is packed on every call: where the kernel packs it
    block by block (:func:`_packs_in_kernel`, at static or dynamic sizes) the kernel
    computes the conv whatever the class; another weight-bound conv (``weight_bound``) goes to the library,
    which reads the plain weight; of
    dynamic sizes, one Winograd takes per size runs on the library at the sizes
    it does not take (``conv/sized.py``), which decides that per call."""
    from xdsl.dialects.builtin import f32

    from tessera.dialects.tsr.shapes import elem_of

    rank = len(op.input.type.get_shape())
    layouts = (kernel_layout(op.input), kernel_layout(op.result)) if rank in (4, 5) else (None,)
    if None in layouts or not all(elem_of(v.type) == f32 for v in (op.input, op.weight, *op.epilogue, op.result)):
        return None
    isa = _isa(features)
    if isa is None:
        return None
    m = winograd_m(op, isa, freezing)
    if not freezing and weight_layout(op.weight) == "dhwio":  # a linear's [K, N] weight: read in place, or the library
        return isa if _packs_in_kernel(op, isa) else None
    if m == PER_SIZE:
        return f"{isa}{WINOGRAD}"
    if not freezing and _packs_in_kernel(op, isa):
        return f"{isa}{WINOGRAD}{m}" if m is not None else isa
    if not freezing and weight_bound(op) and not gemm_per_size(op, freezing):
        return None  # packed per call (at dynamic sizes: a large weight, the library call decides per size)
    if m is not None:
        return f"{isa}{WINOGRAD}{m}"
    return isa if prefers_tessera("x86", ConvShape.of(op), *layouts) else None
