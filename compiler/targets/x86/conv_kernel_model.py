"""Which convolutions run on tessera's own kernel (``targets/x86/conv``) rather than
oneDNN's, per shape class: a measured cost model, asked once per ``tsr.conv``
by the host program.

The competitor is what the host program calls otherwise: oneDNN's
``mkldnn._convolution_pointwise`` with the weight reordered once (the call of
``OneDnnConv``, and Inductor's under freezing), channels-last, which returns
a newly allocated output. tessera's kernel is a launch of the program, whose
output is a buffer kept between calls (``runtime/program.py``), and is timed
that way. Both read and write channels-last f32, bias fused. The rule is a
list of (shape class, measured speedup of tessera over that call) tried in
order; the first class that matches decides, and tessera's kernel is used
when the speedup is at least ``MIN_GAIN`` (below it the two are within this
machine's noise, and the library stays).

x86, Xeon (Sapphire Rapids class, AVX-512, in a VM), fp32,
``bench/conv_kernels.py`` (session 6), speedup in three runs: 1 thread timed
with the thread's CPU clock (``--threads 1 --cpu-time``) | 2 threads, wall
clock | 2 threads, wall clock, Inductor compiling between the shapes::

    f32 only (the kernels compute f32) ............................. -                    oneDNN
    depthwise 3-D (3x3x3, 64 ch, 4x32x32) .......... 1.18x | 1.72x | 0.95x    tessera (median 1.18)
    depthwise 2-D (3x3, 256 ch, 56x56) ............. 1.10x | 1.07x | 1.00x    tessera (median 1.07)
    C_in/groups < 16 (3->64 at 224x224) ............ 0.37x | 0.54x | 0.44x    oneDNN
      (one group, its taps rolled since session 32: 0.74x-3.5x, FEW_CHANNELS_SPEEDUP)  tessera
    grouped, 16 ch per group (g=8, 128 ch) ......... 1.15x | 1.14x | 1.23x    tessera
    grouped, 8 ch per group (RegNetY-400MF's 3x3, AMD EPYC, 1 thread, session 18):
      48 g6 56x56 1.15x, 104 g13 28x28 1.28x, 208 g26 14x14 1.03x,
      440 g55 7x7 1.69x, 104 g13 56x56 s2 1.31x ..... median 1.28x             tessera
      (AVX-512, channelwise: two groups a vector, Xeon, 1 thread, session 31:
      2.0x, 1.8x, 2.4x, 2.9x, 1.6x, ResNeXt's 256 g32 28x28 1.5x)
    grouped, 2 or 4 ch per group in and out (channelwise, session 31):
      ResNeXt-50 32x4d's 128 g32 56x56 ............. 3.14x (AVX2 build 2.1x)   tessera
    1x1x1 conv3d (128->64, 4x32x32) ................ 1.29x | 1.39x | 1.17x    tessera
    1x1 conv2d 256->256 at 56x56 ................... 1.05x | 1.06x | 1.07x    tessera
    1x1 conv2d 256->64 at 56x56 .................... 1.25x | 1.21x | 0.96x
    3x3 stride 2 (64->128 at 64x64) ................ 1.06x | 1.06x | 1.07x    tessera
    3x3 stride 1, at most 13x13 output points (under 16 Winograd tiles: AVX-512 keeps
      the direct path; Xeon, 1 thread, session 31): 256->256 7x7 1.40x and 64->64
      13x13 1.94x; 512->512 7x7 1.08x, 1.22x once its 9 MB weight was
      prefetched a block ahead ................................ 1.22x    tessera
    3x3 / 3x3x3 stride 1, >= 16 ch per group:
      conv3d 96->96 1x96x5x26x26 ................... 0.90x | 0.90x | 0.90x
      conv2d 128->128 64x64 p1 ..................... 0.98x | 1.02x | 1.08x
      VAE conv1/2 64->64 1x64x6x34x34 .............. 0.94x | 0.90x | 1.08x
      VAE conv_up 64->64 1x64x4x64x64 p1 ........... 0.85x | 0.96x | 0.92x
      conv2d 64->64 64x64 p1 ....................... 0.95x | 1.01x | 1.03x
      conv2d 128->128 batch 4 32x32 ................ 1.07x | 0.89x | 0.94x    oneDNN (0.95x)
    2x2 and temporal k x 1 x 1 windows, stride 1 (Xeon, 1 thread, session 34: 1.2x-5.9x,
      ``SMALL_WINDOWS_SPEEDUP``) ............................................ tessera
    3x3 / 3x3x3 stride 1, at most 32 channels, at most 3x32x32 output points (Xeon,
      1 thread, session 34: 1.1x-6.6x, ``FEW_CHANNELS_3X3_POINTS``) ........ tessera

Before session 6 tessera's kernel was timed writing a new output like
oneDNN, and every class stayed on oneDNN (0.32x-1.05x): what the kernel wins
now is mostly the allocation (page faults of a new multi-MB output, which
vary with the state of the heap: hence the spread between runs) and the
memory-bound classes where it streams channels-last rows well (1x1,
depthwise, grouped). The dense 3x3 convs run at 53-80% of the FMA peak on
both, oneDNN's a few percent ahead. Speedups are medians of the runs; the
MobileNetV2 block end to end (1x1, depthwise, 1x1) runs 1.44-1.48x faster with
these classes on tessera than with every conv on oneDNN. Every rule below is measured; the host
program asks :func:`prefers_tessera`.

    >>> prefers_tessera("x86", ConvShape(spatial=3, dtype="f32", in_channels=96, out_channels=96,
    ...     groups=1, kernel=(3, 3, 3), stride=(1, 1, 1)))
    False
"""

from __future__ import annotations

from tessera.passes.target_models import ConvShape, Rule, first_rule

MIN_GAIN = 1.05

WINOGRAD_MIN_CHANNELS = 16
"""Fewer input channels leave the Winograd GEMM too short (3->64 at 224x224: 0.22x oneDNN)."""
WINOGRAD_TILES = {"avx512": ((49, 4), (16, 2)), "avx2": ((49, 4), (16, 2), (4, 4))}
"""Per vector path, ``(least 4x4 output tiles over the batch, m)``, tried in order (:func:`prefers_winograd`)."""


def prefers_winograd(conv: ConvShape, tiles: int, isa: str) -> int | None:
    """``m`` of the Winograd F(m x m, 3 x 3) (``targets/x86/conv/winograd.py``) that
    computes a stride-1 3x3 f32 conv with ``tiles`` 4x4 output tiles on the vector
    path ``isa``, weights transformed once, or None (the direct kernel or oneDNN).
    ``bench/conv_kernels.py --threads 1 --cpu-time``, AMD EPYC (Zen 5 class, AVX-512),
    bias, candidates interleaved call by call; speedup over the faster of tessera's
    direct kernel and oneDNN's prepacked call::

        conv, output               4x4 tiles   F(4x4)   F(2x2)
        128->128, 64x64 ............. 256 .... 2.32x    1.59x
        128->128, batch 4, 32x32 .... 256 .... 2.05x    1.42x
        64->64, 56x56 ............... 196 .... 1.94x    1.40x
        64->64, 64x64 ............... 256 .... 1.91x    1.29x
        32->32, 64x64 ............... 256 .... 1.57x    1.25x
        16->16, 64x64 ............... 256 .... 1.18x    0.75x
        128->128, 28x28 .............. 49 .... 2.15x    1.64x
        256->256, 14x14 .............. 16 .... 1.11x    1.27x
        64->64, 13x13 ................ 16 .... 1.04x    1.04x
        256->256, 7x7 ................. 4 .... 0.55x    0.84x
        512->512, 7x7 ................. 4 .... 0.56x    0.86x
        3->64, 224x224 ............. 3136 .... 0.22x    0.20x   (3 input channels)

    F(4x4) does 4x fewer multiplies than the direct conv, F(2x2) 2.25x; with few
    tiles the 36 (16) transformed weight matrices are streamed for a few rows
    each. Relative error against eager: F(4x4) 4-14e-6, F(2x2) 3-11e-7 (direct:
    1-2e-6), inside f32 tolerances.

    On AVX2 alone (AMD EPYC, Zen 3, 100 GFLOP/s FMA peak, session 20) the
    direct kernel and oneDNN both fall to 55-65% of the peak at 7x7, and Winograd
    wins there too (two runs, 9 and 15 rounds)::

        conv, output               4x4 tiles   F(4x4)        F(2x2)
        128->128, 28x28 .............. 49 .... 2.08x         1.65x
        64->64, 56x56 ............... 196 .... 1.92x         1.34x
        256->256, 14x14 .............. 16 .... 1.64x         1.64x
        64->64, 13x13 ................ 16 .... 1.00x         1.10x
        256->256, 7x7 ................. 4 .... 1.15x 1.08x   1.40x 1.21x
        512->512, 7x7 ................. 4 .... 1.26x 1.16x   1.06x 0.97x
        16->16, 64x64 ............... 256 .... 0.96x         0.87x   (direct 1.61x oneDNN)

    so F(4x4) from 4 tiles there (ResNet's last stage).
    """
    if conv.in_channels < WINOGRAD_MIN_CHANNELS:
        return None
    return next((m for least, m in WINOGRAD_TILES.get(isa, ()) if tiles >= least), None)


WINOGRAD_PER_CALL: dict[str, tuple[tuple[int, int, int | None, int], ...]] = {
    "avx512": ((36, 64, 256 * 256, 4), (64, 32, 256 * 256, 4), (256, 16, 256 * 256, 4), (36, 64, None, 2)),
    "avx2": ((36, 64, 128 * 128, 4), (36, 64, None, 2)),
}
"""Per vector path, ``(least 4x4 output tiles over the batch, least channels in and out, most
``C_in * C_out`` or None, m)``, tried in order (:func:`prefers_winograd_per_call`)."""


def prefers_winograd_per_call(conv: ConvShape, tiles: int, isa: str) -> int | None:
    """:func:`prefers_winograd` where the weight is not frozen (training; inference as
    ``torch.compile`` runs it by default): the transform and packing run on every call
    (64->64 F(4x4): 0.14 ms, into buffers kept between calls, ``conv/kept.py``).

    AVX-512, AMD EPYC Zen 4, 1 thread, channels-last, bias, batch 1 to 8, the
    transform and pack included, into kept buffers as the program runs them,
    interleaved (``bench/winograd_per_call.py``, session 40); speedup over the faster of tessera's
    direct kernel with its weight packed per call and oneDNN's call (which reorders
    its weight per call too)::

        conv, 4x4 tiles:        4     16     32     36     49     64    128    256
        16->16    F(4x4) ... 0.20   0.35   0.46                 0.76   0.91   1.23
        32->32    F(4x4) ... 0.25   0.58   0.80                 1.27   1.37   1.04
        64->64    F(4x4) ... 0.30   0.68   1.02   1.21   1.33   1.55   1.89   1.59
                  F(2x2) ... 0.50   0.91   1.16   1.16   1.15   1.19   1.31   1.03
        128->128  F(4x4) ... 0.29   0.66   0.90   1.27   1.32   1.19   1.62   1.64
                  F(2x2) ... 0.54   0.91   1.08   1.16   1.22   0.91   1.05   0.93
        256->256  F(4x4) ... 0.26   0.62   0.86   1.10   1.22   1.33   1.85   1.92
                  F(2x2) ... 0.59   1.03   1.24   1.20   1.20   1.27   1.34   1.27
        512->512  F(4x4) ... 0.25   0.62   0.78   1.03   1.20   1.33
                  F(2x2) ... 0.51   0.90   1.12   1.15   1.23   1.27

    (runs of one process differ by up to 30%; a benchmark whose packs allocate new
    tensors instead measures page faults: 512->512 F(4x4) 51 ms against 19.) F(2x2) at
    32 tiles measured 1.1-1.2x alone and nothing inside a training step (the SD-style
    decoder's 64->64 convs at 8x8, batch 8), so it is left out.

    On AVX2 alone (AMD EPYC Zen 3, session 27; time over oneDNN's, so below 1 is faster)::

        conv, output           4x4 tiles   oneDNN ms   F(4x4)    F(2x2)
        64->64, 16x16 .............. 16 ..... 0.49 ... 1.38x ... 1.44x   (the direct kernel: 0.82x)
        64->64, 24x24 .............. 36 ..... 0.92 ... 0.68x ... 1.01x
        64->64, 32x32 .............. 64 ..... 1.38 ... 0.49x ... 0.58x
        128->128, 24x24 ............ 36 ..... 3.49 ... 0.77x ... 0.66x
        128->128, batch 8, 16x16 .. 128 .... 12.37 ... 0.58x ... 0.73x
        256->256, 24x24 ............ 36 .... 11.62 ... 1.36x ... 0.83x
        512->512, 32x32 ............ 64 .... 74.92 ... 1.19x ... 0.69x

    32->32 (batch 8, 16x16, an input gradient) took 1.11x oneDNN's time there.
    An Intel Xeon's AVX-512 (two 512-bit FMA ports) has not been measured: its direct
    kernel is faster against the memory-bound transforms."""
    for least_tiles, least_channels, most_weight, m in WINOGRAD_PER_CALL.get(isa, ()):
        if (tiles >= least_tiles and min(conv.in_channels, conv.out_channels) >= least_channels
                and (most_weight is None or conv.in_channels * conv.out_channels <= most_weight)):
            return m
    return None


CHANNELWISE_GROUPS_SPEEDUP = 3.14
"""tessera's channelwise kernel over oneDNN's packed call on groups of 2 or 4 channels (ResNeXt-50
32x4d's 128 g32 at 56x56: 99.2 against 31.6 GFLOP/s, BENCHMARKS.md session 31); the layout table
counts it too (``conv_layouts.py``)."""


def channelwise_groups(c: ConvShape) -> bool:
    """Groups of 2 or 4 channels in and out: at least two a vector on either path, which the
    kernel computes channelwise (``targets/x86/conv/tiling.py``); oneDNN's call fills a
    vector with one group's few channels."""
    return c.groups > 1 and not c.depthwise and c.in_channels == c.out_channels and c.channels_per_group in (2, 4)


_NO_KERNEL = (
    Rule("not f32", lambda c: c.dtype != "f32", 0.0),
    Rule("1-D conv (no kernel)", lambda c: c.spatial not in (2, 3), 0.0),
)
_CHANNELS_LAST_ONLY = Rule("depthwise (channels are the vector lanes: channels-last only)", lambda c: c.depthwise, 0.0)
_ONE_POINT = Rule("one output point (a squeeze-excite 1x1 on pooled channels)", lambda c: c.points == 1, 5.2)
"""A product of one pixel: oneDNN's call costs ~20 us of overhead, tessera's launch ~2
(``bench/conv_kernels.py``, AMD EPYC, 1 thread: 8->32 10.2x, 4->96 10.3x, 48->1152 5.2x).
Either layout of a ``1xCx1x1`` tensor is the same memory."""

FEW_CHANNELS_SPEEDUP = 1.15
"""tessera's kernel over oneDNN's prepacked call on a conv of one group and fewer than 16 input
channels (a stem's 3), channels-last (grouped ones keep 0.44x: a dense tile of a group's few
output channels fills few lanes). Until session 32 the kernel ran these at 36-46% of the FMA peak
(0.44x oneDNN): its 3-step channel loops, unrolled with the taps, let LLVM keep broadcasts
live across taps and spill them; the taps are loops now (``microkernel._rolled_taps``).
``bench/conv_kernels.py --threads 1 --cpu-time``, Xeon (AVX-512), session 32, speedup::

    7x7 s2 3->64 224x224 (ResNet) ... 1.14x 1.08x    3x3 3->64 224x224 ........ 0.78x 0.74x
    7x7 s2 3->96 224x224 (SqueezeNet) 1.03x          3x3 4->128 224x224 ....... 0.98x
    4x4 s4 3->96 224x224 (ConvNeXt) . 1.35x          3x3 4->512 64x64 ......... 1.18x 1.10x
    3x3 3->64 64x64 ................. 1.97x          3x3 8->64 64x64 .......... 1.30x
    3x3 4->512 128x128 .............. 3.5x (oneDNN allocating a 32 MB output)

The median is taken. Stride 1 at 224x224 both are bound by the output's write (12.8 MB and
more); oneDNN leads there. ``_STEM`` keeps its own end-to-end figure."""

FEW_CHANNELS_NCHW_SPEEDUP = 1.15
"""The kernel reading a ``C_in < 16`` conv's NCHW input (a network's image) over a relayout kernel
before it: with its taps as loops (``FEW_CHANNELS_SPEEDUP``) it runs either layout at the same
speed (7x7 s2 3->64: 1.347 against 1.343 ms; 3x3 s2 3->32: 0.132 against 0.135), so the relayout
it saves is the gain (0.065 ms at 3x224x224 over a 3x3 stem's 0.135: ~1.5x; over a 7x7 stem's
1.35 ms, 1.05x). 1.15 lies between those two derived figures; it was not measured as one ratio
(``bench/conv_layout_folds.py`` compiles without freezing, where these convs stay on oneDNN:
1.03x there for 3->64 at 224x224 and 3->32 at 112x112). End to end, freezing, 1 thread,
alternating processes: MobileNetV3-small 2.045, 2.048, 2.122 ms with it against 2.081, 2.116,
2.125 without."""

_STEM = Rule("a 3x3 stride-2 stem (C_in < 16)", lambda c: (
    c.spatial == 2 and c.groups == 1 and c.channels_per_group < 16 and c.kernel == (3, 3) and c.stride == (2, 2)), 1.5)
"""MobileNetV2's, EfficientNet's and RegNetY's first conv (3->32 at 224x224). Alone both
ran it at ~170 GFLOP/s (``bench/conv_kernels.py``: 1.01x); in the network oneDNN's call costs
0.29-0.41 ms against ~0.13 alone (likely the 1.6 MB output it allocates on each call, faulted
in; not measured apart), and the kernel, writing a kept buffer, saved
0.13-0.17 ms end to end (interleaved A/B, 1 thread, freezing: MobileNetV2 4.75 -> 4.58 ms,
RegNetY-400MF 7.79 -> 7.65): ~1.5x. On the Xeon of session 32 the kernel ran it at 115 GFLOP/s
before its taps were rolled (``FEW_CHANNELS_SPEEDUP``) and 135-160 after: 1.5x oneDNN's call."""

FEW_CHANNELS_3X3_POINTS = 3 * 32 * 32
"""Most output points of a 3x3 (3x3x3) stride-1 conv of at most 32 channels that the kernel takes
(the rule before the last of ``X86_RULES``; of dynamic sizes it takes them at every size).
``bench/conv_default_calls.py --threads 1`` (``--frames 3`` for conv3d, padding 1), Xeon
(AVX-512), session 34; the kernel over oneDNN's call, weight packed once (freezing) | the
kernel packing its weight per call over the fastest library call reading the plain weight::

    conv3d 16->16 3x8x8 .. 3.3x | 3.2x     conv2d 16->16 8x8 ... 6.6x | 1.8x
    conv3d 16->16 3x16x16  1.7x | 1.7x     conv2d 16->16 32x32 . 2.1x | 2.1x
    conv3d 16->16 3x32x32  1.2x | 1.2x     conv2d 16->16 64x64 . 1.3x | 1.4x
    conv3d 32->32 3x8x8 .. 1.8x | 1.8x     conv2d 32->32 16x16 . 2.2x | 1.6x
    conv3d 32->32 3x16x16  1.2x | 1.3x     conv2d 32->32 32x32 . 1.4x | 1.4x
    conv3d 32->32 3x32x32  1.1x | 1.1x     conv2d 32->32 64x64 . 1.1x | 0.92x

(medians of 15-21 calls). At 64 channels and more the two are within 1.0-1.2x (conv3d 128->128
3x16x16: 1.0x | 1.0x; 256->256 3x32x32 1.0x | 0.98x), and at 96 channels 3x26x26 oneDNN leads
(0.91x): those stay on the library. Under freezing a 2-D conv past 13x13 takes Winograd first.
The WAN 2.1 decoder's causal 3x3x3 convs at an 8x8 latent (32 -> 32 at 3x10x10, padding 0) were
one of the library's calls at 93 us against the kernel's 50, its weight packed per call."""

SMALL_WINDOWS_SPEEDUP = 1.9
"""tessera's kernel over oneDNN's prepacked call on stride-1 2x2 windows (the phases of
``fold-upsample-into-conv``'s polyphase convs: every upsampling decoder) and temporal
``k x 1 x 1`` windows (a video VAE's time conv). ``session 34``, Xeon (AVX-512), 1 thread,
medians of 30 calls, us: oneDNN prepacked, the kernel prepacked | the best library call
reading the plain weight, the kernel packing per call::

    2x2 32->64 at 10x10 .............. 43, 11 | 28, 17      (WAN decoder's upsampler, 8x8 latent)
    2x2 32->64 at 10x10, batch 2 ..... 47, 18 | 70, 25
    3x1x1 32->64 at 3x8x8 ............ 41, 7  | 23, 13      (WAN decoder's time conv)
    2x2 64->128 at 18x18 ........... 220, 113 | 333, 173
    2x2 64->64 at 34x34 ............ 245, 200 | 282, 216
    3x1x1 128->256 at 3x16x16 ...... 343, 279 | 412, 324
    2x2 32->32 at 66x66 ............ 234, 196 | 263, 194

1.2x-5.9x (median 1.95) prepacked, 1.3x-2.8x per call."""


def small_windows(c: ConvShape) -> bool:
    """A stride-1 2x2 window, or a temporal ``k x 1 x 1`` one (:data:`SMALL_WINDOWS_SPEEDUP`)."""
    return set(c.stride) == {1} and (c.kernel == (2, 2) or (c.spatial == 3 and c.kernel[1:] == (1, 1)))


X86_RULES = (
    *_NO_KERNEL,
    _ONE_POINT,
    Rule("depthwise 3-D", lambda c: c.depthwise and c.spatial == 3, 1.18),
    Rule("depthwise 2-D", lambda c: c.depthwise, 1.07),
    Rule("grouped, 8-15 channels per group", lambda c: c.groups > 1 and c.channels_per_group >= 8, 1.28),
    Rule("grouped, 2 or 4 channels per group in and out (channelwise)", channelwise_groups, CHANNELWISE_GROUPS_SPEEDUP),
    _STEM,
    Rule("C_in < 16, one group", lambda c: c.groups == 1 and c.channels_per_group < 16, FEW_CHANNELS_SPEEDUP),
    Rule("C_in/groups < 16", lambda c: c.channels_per_group < 16, 0.44),
    Rule("grouped", lambda c: c.groups > 1, 1.15),
    Rule("1x1x1 conv3d", lambda c: c.pointwise and c.spatial == 3, 1.29),
    Rule("1x1 conv2d", lambda c: c.pointwise, 1.07),
    Rule("strided window", lambda c: any(s > 1 for s in c.stride), 1.06),
    Rule("2x2, and k x 1 x 1 (temporal) windows, stride 1", small_windows, SMALL_WINDOWS_SPEEDUP),
    Rule("3x3 stride 1, at most 13x13 output points", lambda c: (
        c.kernel == (3, 3) and c.stride == (1, 1) and c.points is not None and c.points <= 169), 1.22),
    Rule("3x3 / 3x3x3 stride 1, at most 32 channels in and out, at most 3x32x32 output points", lambda c: (
        c.kernel in ((3, 3), (3, 3, 3)) and set(c.stride) == {1} and max(c.in_channels, c.out_channels) <= 32
        and (c.points is None or c.points <= FEW_CHANNELS_3X3_POINTS)), 1.5),
    Rule("3x3 / 3x3x3 and larger windows, stride 1", lambda c: True, 0.95),
)


RULES: dict[str, tuple[Rule, ...]] = {"x86": X86_RULES}

X86_CONTIGUOUS_INPUT_RULES = (
    *_NO_KERNEL,
    _CHANNELS_LAST_ONLY,
    _ONE_POINT,
    Rule("C_in < 16, one group", lambda c: c.groups == 1 and c.channels_per_group < 16, FEW_CHANNELS_NCHW_SPEEDUP),
    Rule("C_in/groups < 16 (the kernel's own class: 0.44x channels-last)", lambda c: c.channels_per_group < 16, 0.44),
    Rule("3-D", lambda c: c.spatial == 3, 1.01),
    Rule("C_in/groups > 64", lambda c: c.channels_per_group > 64, 1.02),
    Rule("2-D, 16-64 input channels per group", lambda c: True, 1.30),
)
"""tessera's kernel reading the conv's NCHW/NCDHW input (``fold-relayouts-into-convs``)
against the program with that relayout a kernel of its own before the conv.
``bench/conv_layout_folds.py`` (session 6), one-conv models end to end, speedup
2 threads (two runs) | 1 thread. The kernel broadcasts one input scalar per
(pixel, channel), so either layout serves it; beyond 64 channels the plane-sized
channel step costs what the relayout saved::

    2-D 3x3 64->64 56x56 ............ 1.14x 1.15x | 1.11x
    2-D 3x3 32->32 112x112 .......... 1.33x 1.32x | 1.30x
    2-D 3x3 64->64 28x28 ............ 1.40x 1.40x | 1.25x
    2-D 3x3 16->32 56x56 ............ 1.53x 1.42x | 1.36x
    2-D 1x1 64->128 56x56 ........... 1.00x 1.01x | 1.14x
    3-D 3x3x3 48->48 4x32x32 ........ 1.01x 1.01x | 1.08x
    2-D 1x1 256->64 56x56 ........... 1.04x 1.02x | 1.02x
    2-D 3x3 128->128 64x64 .......... 1.02x        | 1.01x   (assign-layouts keeps it NCHW: no relayout to fold)
"""

CONTIGUOUS_INPUT_RULES: dict[str, tuple[Rule, ...]] = {"x86": X86_CONTIGUOUS_INPUT_RULES}

X86_CONTIGUOUS_OUTPUT_RULES = (
    *_NO_KERNEL,
    _CHANNELS_LAST_ONLY,
    _ONE_POINT,
    Rule("C_in/groups < 16 (the kernel's own class: 0.44x channels-last)", lambda c: c.channels_per_group < 16, 0.44),
    Rule("3-D", lambda c: c.spatial == 3, 0.97),
    Rule("2-D", lambda c: True, 1.13),
)
"""tessera's kernel writing NCHW/NCDHW output (and reading the residual so: the
relayout after a conv, or the add-and-relayout of a ResNet shortcut, folded in)
against the program with the relayout (and the add) a kernel of its own after the
conv. Each tile is transposed in registers and each channel's row of pixels is
stored contiguously; it keeps no partial sums between input-channel blocks then.
The figures below predate that store (session 35; before, a scratch tile read back
a float at a time, 1.6-2.7x the channels-last store on 32x32-64x64 planes): the
1-thread losses are likely gone, but ``bench/conv_layout_folds.py`` now measures
Winograd for most of these cases (their 3x3 convs take it, which folds no relayout), so
the figures stand until the script measures the direct kernel again. ``bench/conv_layout_folds.py`` (session 6), one-conv models end to
end, speedup 2 threads (two runs) | 1 thread::

    2-D 3x3 64->64 56x56 ........................ 1.15x 1.15x | 0.96x
    2-D 3x3 32->32 112x112 ...................... 1.21x 1.19x | 0.99x
    2-D 3x3 128->128 28x28 ...................... 1.43x 1.40x | 1.39x
    2-D 3x3 256->256 14x14 ...................... 1.50x 1.25x | 1.41x
    2-D 1x1 144->24 56x56 ....................... 1.13x 1.10x | 1.00x
    2-D 3x3 64->64 56x56, + NCHW residual, ReLU . 1.09x 1.10x | 0.94x
    2-D 1x1 144->24 56x56, + NCHW residual, ReLU  1.00x 1.05x | 0.96x
    3-D 3x3x3 64->64 4x32x32 .................... 0.97x 0.98x | 0.88x

The 2-D rule is the median of its 21 figures. On 1 thread the convs with up to
64 input channels break even or lose a little (0.94-1.00x): the rules do not
know the thread count.
"""

CONTIGUOUS_OUTPUT_RULES: dict[str, tuple[Rule, ...]] = {"x86": X86_CONTIGUOUS_OUTPUT_RULES}


def rules_for(target: str, conv: ConvShape, input_layout: str = "channels_last",
              output_layout: str = "channels_last") -> list[Rule | None]:
    """The measured classes that decide ``conv`` with these layouts: channels-last in
    and out, tessera's kernel over oneDNN's prepacked call; a ``contiguous`` input or
    output, the kernel reading or writing it over that call plus the relayout (one
    class for each)."""
    if input_layout == output_layout == "channels_last":
        return [rule_for(target, conv)]
    tables = ([CONTIGUOUS_INPUT_RULES] if input_layout != "channels_last" else []) + (
        [CONTIGUOUS_OUTPUT_RULES] if output_layout != "channels_last" else [])
    return [first_rule(t.get(target, ()), conv) for t in tables]


def rule_for(target: str, conv: ConvShape) -> Rule | None:
    """The measured class of a channels-last ``conv`` (speedup: tessera's kernel over oneDNN's prepacked call)."""
    return first_rule(RULES.get(target, ()), conv)


def prefers_tessera(target: str, conv: ConvShape, input_layout: str = "channels_last",
                    output_layout: str = "channels_last") -> bool:
    """Whether ``conv``, its input and output stored ``input_layout``/``output_layout``
    (``channels_last`` or ``contiguous``), should run on tessera's kernel on ``target``
    (only x86 has one): every deciding class measured at least ``MIN_GAIN``."""
    return all(r is not None and r.speedup >= MIN_GAIN for r in rules_for(target, conv, input_layout, output_layout))
