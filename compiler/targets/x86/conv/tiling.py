"""The register tile and the tiles of an output row, chosen from the spec.

    t = choose_tiling(ConvSpec(1, 96, 96, (5, 26, 26), (3, 3, 3)))
    t.nv, t.nr, t.mr          # 2 vectors (32 output channels) x 12 pixels: 24 zmm accumulators
    t.row_tiles               # (WTile(0, 12, static=False), WTile(12, 12, static=False))

Dense convs: a tile is ``mr`` output pixels along W times ``nv`` vectors of
output channels (``nr = nv * lanes`` channels, one block of the packed
weight); ``nv`` is the one (2, 3, 4 or 1) that pads the group's output
channels least (a single vector counted 1.25x: its loop is load-bound), ``mr`` the most pixels whose accumulators fit the registers
(``ConvIsa.max_pixels``) and whose inputs do not crowd one L1 set
(``unaliased_pixels``), then evened out over the row. Channelwise kernels
vectorize over channels: one vector of channels times ``mr`` pixels. That is a
depthwise conv, and a grouped one whose groups of ``k`` channels in and out are
narrower than a vector (RegNet's 8 on AVX-512: ``lanes // k`` groups a vector,
where the dense tile would leave half of every vector idle)::

    t = choose_tiling(ConvSpec(1, 104, 104, (28, 28), (3, 3), padding=1, groups=13))
    t.channelwise, t.group_width, t.mr    # True, 8, 3: 8 accumulators of 16 lanes a pixel

A row's tiles are *dynamic* (one function, any ``ow0``: every tap lands in
the input) or *static* (their own function, ``ow0`` a constant): the tiles
that meet the left/right padding, whose out-of-range taps are left out at
compile time (no padded copy of the input, no masks in the inner loop), and a
narrower last tile.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tessera.compiler.targets.x86.conv.isa import get_conv_isa
from tessera.compiler.targets.x86.conv.spec import ConvSpec

NV_ORDER = (2, 3, 4, 1)
CHANNELWISE_PIXELS = 16
L1_WEIGHT_BYTES = 24 * 1024
"""Packed weights of one input-channel block (all taps, one output block) kept in L1."""
MIN_CI_BLOCK = 16
"""Fewer input channels per tap make the inner loop too short to pay for its setup."""
L2_WEIGHT_BYTES = 1024 * 1024
"""All packed weights up to this size stay in L2: the grid walks rows outermost."""
L1_LINE, L1_SETS = 64, 64
"""An L1 data cache of 64 sets of 64-byte lines: addresses 4 KB apart share a set (every
x86 core measured: 32 KB of 8 ways on Zen 3/4, 48 KB of 12 ways on Zen 5 and Intel's)."""
ALIASED_PIXELS = 7
"""The most input pixels of a dense tile that one L1 set holds (``unaliased_pixels``)."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class WTile:
    ow0: int
    width: int
    static: bool


@dataclass(frozen=True)
class Tiling:
    lanes: int
    nv: int
    mr: int
    row_tiles: tuple[WTile, ...]
    blocks: int
    """Channel blocks of ``nr`` channels per group (dense) or in all (channelwise)."""
    channelwise: bool
    """Channels are the vector lanes (``microkernel``): a depthwise conv, or narrow groups."""
    ci_block: int = 1
    """Input channels per cache block (dense): a tile's accumulators go through
    ``out`` between blocks, so one block's weights serve every tile of the row from L1."""
    ci_blocks: int = 1
    rows_outer: bool = False
    """Dense: grid ``(N, OD, OH, blocks)`` (weights small enough for L2: rows share their
    input across blocks) rather than ``(blocks, N, OD, OH)``. (Depthwise grids are rows alone;
    a kernel that packs its weight, ``ConvSpec.packs_weight``, walks blocks outermost.)"""
    group_width: int = 1
    """Channelwise: channels of a group (in and out), 1 for a depthwise conv. A tile keeps
    ``group_width`` accumulators a pixel, one for each rotation of the group's weights."""

    @property
    def nr(self) -> int:
        return self.nv * self.lanes


def _interior(spec: ConvSpec, ow0: int, width: int) -> bool:
    kw, sw, pw, dw = spec.as3d("kernel")[2], spec.as3d("stride")[2], spec.as3d("padding")[2], spec.as3d("dilation")[2]
    w = spec.as3d("input_size")[2]
    return ow0 * sw - pw >= 0 and (ow0 + width - 1) * sw - pw + (kw - 1) * dw <= w - 1


def row_tiles(spec: ConvSpec, mr_max: int) -> tuple[int, tuple[WTile, ...]]:
    ow = spec.as3d("output_size")[2]
    count = cdiv(ow, mr_max)
    mr = cdiv(ow, count)
    tiles = []
    for t in range(count):
        ow0 = t * mr
        width = min(mr, ow - ow0)
        tiles.append(WTile(ow0, width, static=width != mr or not _interior(spec, ow0, width)))
    return mr, tuple(tiles)


def aliased_pixels(spec: ConvSpec, mr: int) -> int:
    """The most of a dense tile's ``mr`` input pixels (at one tap) whose lines share an L1 set."""
    step = spec.as3d("stride")[2] * spec.pixel_stride * 4
    lines = {p * step // L1_LINE for p in range(mr)}
    return max(Counter(line % L1_SETS for line in lines).values())


def unaliased_pixels(spec: ConvSpec, mr_max: int) -> int:
    """The widest tile, up to ``mr_max`` pixels, that keeps at most :data:`ALIASED_PIXELS` of
    its input pixels in one L1 set. A tile broadcasts each pixel's input channel ``ci`` in
    turn: with pixels read 4 KB apart (1024 channels, or 512 at stride 2) every pixel's line
    falls in the same set, and 14 of them (AVX-512's widest tile) overflow its 8 ways on
    every step. Kernel alone, Zen 4, 1 thread, hot caches (``BENCHMARKS.md``, session 49):
    1x1 1024 -> 512 at 14x14 2.43 -> 1.84 ms (OpenVINO's brgconv 1.88), 512 -> 1024 at
    stride 2 2.43 -> 1.90, 3x3 1024 -> 1024 at 14x14 39.8 -> 31.6.

        >>> unaliased_pixels(ConvSpec(1, 1024, 512, (14, 14), (1, 1)), 14)
        7
        >>> unaliased_pixels(ConvSpec(1, 768, 768, (14, 14), (1, 1)), 14)   # 3 KB apart: 4 sets
        14
    """
    mr = mr_max
    while mr > 1 and aliased_pixels(spec, mr) > ALIASED_PIXELS:
        mr -= 1
    return mr


def channelwise_width(spec: ConvSpec, lanes: int) -> int | None:
    """The channels of a group when ``spec`` runs channelwise on ``lanes``-wide vectors: a
    depthwise conv (1), or groups of ``k`` channels in and out, at least two groups a vector
    (``k`` dividing ``lanes``), read and written channels-last, the weight packed apart
    (not ``flipped_weight``: that is packed by channel blocks)."""
    k = spec.cin_g
    if spec.groups == 1 or spec.flipped_weight or spec.cout_g != k or lanes % k or 2 * k > lanes:
        return None
    if k > 1 and (spec.packs_weight or (spec.input_layout, spec.output_layout) != ("channels_last",) * 2):
        return None
    return k


def choose_tiling(spec: ConvSpec) -> Tiling:
    isa = get_conv_isa(spec.isa)
    lanes = isa.lanes
    k = channelwise_width(spec, lanes)
    if k is not None:
        blocks = cdiv(spec.out_channels, lanes)
        if k == 1:
            # LLVM keeps each input vector in a register for the KW taps that read it:
            # mr accumulators + (mr + KW - 1) inputs + KW weights
            kw = spec.as3d("kernel")[2]
            mr, tiles = row_tiles(spec, max(2, min(CHANNELWISE_PIXELS, (isa.registers - 2 * kw + 1) // 2)))
            return Tiling(lanes, 1, mr, tiles, blocks, True)
        # k accumulators and one input vector a pixel, one weight vector at a time
        mr, tiles = row_tiles(spec, max(1, min(CHANNELWISE_PIXELS, (isa.registers - 2) // (k + 1))))
        return Tiling(lanes, 1, mr, tiles, blocks, True, group_width=k)
    # padded channels, one vector per tile counted 1.25x (its inner loop is load-bound: one
    # weight load and one broadcast per FMA)
    nv = min(NV_ORDER, key=lambda v: (cdiv(spec.cout_g, v * lanes) * v * lanes * (1.25 if v == 1 else 1),
                                      NV_ORDER.index(v)))
    mr, tiles = row_tiles(spec, unaliased_pixels(spec, isa.max_pixels(nv)))
    blocks = cdiv(spec.cout_g, nv * lanes)
    kvol = spec.kernel_volume
    # a contiguous output keeps no partial sums between blocks: its tiles are
    # transposed on the way out, too slow to read back and write again per block
    cb = spec.cin_g if spec.output_layout != "channels_last" else max(
        MIN_CI_BLOCK, L1_WEIGHT_BYTES // (kvol * nv * lanes * 4) // 4 * 4)
    nb = cdiv(spec.cin_g, cb)
    cb = cdiv(spec.cin_g, nb) if nb == 1 else cdiv(cdiv(spec.cin_g, nb), 4) * 4
    nb = cdiv(spec.cin_g, cb)
    total = spec.groups * blocks * kvol * spec.cin_g * nv * lanes * 4
    return Tiling(lanes, nv, mr, tiles, blocks, False, cb, nb, total <= L2_WEIGHT_BYTES and not spec.packs_weight)


def block_bytes(spec: ConvSpec, til: Tiling | None = None) -> int:
    """The bytes of one channel block of a dense conv's packed weight (all taps and input
    channels of ``nr`` output channels): what a kernel that packs its weight keeps on its stack."""
    return spec.kernel_volume * spec.cin_g * (til or choose_tiling(spec)).nr * 4


def packs_in_kernel(spec: ConvSpec) -> bool:
    """Whether ``spec``'s kernel packs its weight a block at a time (``ConvSpec.packs_weight``)
    where the weight is packed on every call: a dense conv whose grid walks channel blocks
    outermost anyway (packed weights over L2, ``tiling.L2_WEIGHT_BYTES``), each block at
    most :data:`PACK_STACK_BYTES`. The packing kernel wrote the whole packed weight to
    memory and the conv read it back; now each block is packed where the conv reads it.
    Kernel alone with its packing, AVX2, 1 thread (``BENCHMARKS.md``, session 29): a linear
    of 128 rows 768 -> 768 2.61 -> 2.17 ms (the conv of a weight packed once: 2.08), a 3x3
    512 -> 512 conv at 7x7 8.96 -> 6.27 ms (5.67)."""
    til = choose_tiling(spec)
    if til.channelwise:
        return False
    return not til.rows_outer and block_bytes(spec, til) <= PACK_STACK_BYTES


PACK_STACK_BYTES = 384 * 1024
"""The most bytes of one packed channel block a conv kernel keeps on its stack (``packs_in_kernel``):
a 3x3 conv of 512 input channels (295 KB on AVX2, 16 channels a block)."""
