"""A 1x1 conv's pixels as image rows of the kernel's choosing: the kernel walks an
image row by row, and what a row holds decides how often its inputs are read.

    row_view(25088, 384, 96)      # (196, 128): a linear of 25088 rows as an image of 196 rows of 128
    rows_spec(ConvSpec(1, 1152, 320, (7, 7), (1, 1)))   # the same conv, input_size (1, 49)

A linear layer (``addmm-as-conv``) is a 1x1 conv of ``m`` pixels in whatever rows
:func:`row_view` gives; a static 1x1 stride-1 conv of a dense channels-last image
is too (:func:`rows_spec`): every pixel follows the last in memory whatever the
rows, so its kernel runs on the image's own tensors (``api.load_conv_as``).
"""

from __future__ import annotations

import dataclasses

from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import L2_WEIGHT_BYTES

ROW_BYTES = 256 * 1024
"""The most bytes of inputs an image row of a 1x1 conv holds (:func:`row_view`): at most half
of a core's L2 on the CPUs measured (512 KB on Zen 3, 1 MB on Zen 5, 2 MB on Sapphire Rapids)."""
MIN_ROW_PIXELS = 16
"""The fewest pixels of such a row: fewer leave the kernel's register tiles short."""


def row_view(m: int, k: int, n: int) -> tuple[int, int]:
    """``(H, W)`` of the image that a 1x1 conv of ``m`` rows of ``k`` f32 inputs by a
    ``k x n`` weight (a linear layer, ``addmm-as-conv``) is computed as: ``W`` the largest
    divisor of ``m`` whose row of inputs fits :data:`ROW_BYTES`; one row where none of at
    least :data:`MIN_ROW_PIXELS` does or where the weight outgrows L2.

    The kernel walks image rows outermost where its packed weight fits L2 (``tiling``,
    ``L2_WEIGHT_BYTES``), computing every output channel block of a row before the next,
    so a row's inputs are read from memory once; one row of all ``m`` pixels streamed them
    once per channel block. 1 thread, Zen 3 (``BENCHMARKS.md``, session 21): 25088 rows of
    384 by 384x96 40.3 ms as ``1 x 25088``, 25.2 as ``196 x 128``; 768 -> 192 of 6272 rows
    34.9 -> 21.6; 384 -> 96 of 3136 rows 3.28 -> 2.90. Where the weight outgrows L2 the grid
    walks channel blocks outermost, every row each time: rows measured 0.97-1.02x, and
    cost ConvNeXt-T 2% at batch 1. ConvNeXt-T with freezing, in-process A/B: batch 8
    1227 -> 1130 ms, batch 1 133.0 -> 126.3 ms.

        >>> row_view(25088, 384, 96), row_view(3136, 96, 384), row_view(1568, 1536, 384)
        ((196, 128), (7, 448), (1, 1568))
    """
    if m * k * 4 <= ROW_BYTES or k * n * 4 > L2_WEIGHT_BYTES:
        return 1, m
    most = ROW_BYTES // (4 * k)
    w = next((d for d in range(min(most, m), MIN_ROW_PIXELS - 1, -1) if m % d == 0), None)
    return (1, m) if w is None else (m // w, w)


def rows_spec(spec: ConvSpec) -> ConvSpec:
    """The spec a static 1x1 conv (stride 1, no padding, one group, channels-last) is
    computed as: its ``H x W`` pixels as the image rows :func:`row_view` gives them
    (in a dense channels-last image every pixel follows the last, whatever the rows),
    the kernel checking its tensors as ``spec``'s (``conv.api.load_conv_as``); any
    other conv, ``spec``. Kernel alone, AVX2, 1 thread (``BENCHMARKS.md``, session
    24): 1152 -> 320 at 7x7 1.36x as ``1 x 49``, 192 -> 1152 1.13x, 16 -> 96 at 112x112
    1.13x as ``4 x 3136``, 112 -> 672 at 14x14 1.06x.

        >>> rows_spec(ConvSpec(1, 1152, 320, (7, 7), (1, 1), isa="avx2")).input_size
        (1, 49)
    """
    if (spec.spatial_dims != 2 or spec.kernel != (1, 1) or spec.dims("stride") != (1, 1)
            or spec.dims("padding") != (0, 0) or spec.groups != 1
            or (spec.input_layout, spec.output_layout) != ("channels_last", "channels_last")):
        return spec
    h, w = spec.input_size
    rows = row_view(h * w, spec.in_channels, spec.out_channels)
    return spec if rows == (h, w) else dataclasses.replace(spec, input_size=rows)
