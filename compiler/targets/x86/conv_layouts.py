"""The x86 layout table of convolutions (``passes.target_models``: channels-last or contiguous).

x86 (``bench/conv_layouts.py``, 2 threads, the machine of ``BENCHMARKS.md``).
A channels-last conv calls oneDNN's ``_convolution_pointwise`` with its weight
packed once; a contiguous one ``aten.mkldnn_convolution``, which reorders the
weight on every call (with a packed weight oneDNN computes and returns
channels-last whatever the input, so a contiguous conv cannot use one).
Speedup of the packed channels-last call over the contiguous one, per class::

    bf16 / f16, every conv2d and conv3d .......... 1.5x - 16x    channels-last
    f32 conv3d (3x3x3, 1x1x1, depthwise, C_in=3)   1.08x - 4.6x  channels-last
        (3x3x3 96->96: 1.08x-1.12x over runs; 64->64: 1.13x)
    f32 conv2d grouped, 2 or 4 channels per group
        in and out ............................... 1.08x         channels-last: tessera's
        channelwise kernel, 3.14x oneDNN's packed call (ResNeXt-50 32x4d, session 31): 3.4x
    f32 conv2d grouped, other < 8 channels a group 1.08x         contiguous
    f32 conv2d grouped, 8-15 channels per group .. 1.08x         channels-last: tessera's kernel
        computes it there, 1.03x - 1.69x oneDNN's packed call (median 1.28x: RegNetY-400MF's
        3x3 convs of 8 channels per group, ``bench/conv_kernels.py``, session 18): 1.4x
    f32 conv2d 3x3 stride 1, >= 128 input ch. .... 0.99x - 1.00x channels-last: Winograd
        computes it channels-last only, 1.1x - 2.3x the faster of oneDNN's packed call and
        tessera's direct kernel from 14x14 up under freezing (``conv_kernel_model.prefers_winograd``,
        session 16); without freezing, or at 7x7, the two oneDNN calls tie
    f32 conv2d 5x5 and wider, stride 1, >= 128 ch  0.99x - 1.00x contiguous (measured on 3x3)
    f32 conv2d otherwise (3x3 < 128 ch, 1x1,
        strided, first layers, depthwise,
        >= 16 channels per group) ................ 1.15x - 2.5x  channels-last

(Against the unpacked channels-last call, session 2: the same classes, within
a few percent.)

``CONV_BACKWARD_LAYOUTS``: the layout of ATen's ``convolution_backward``
(oneDNN), which a training backward calls for the gradients tessera's own ops
leave. Channels-last over contiguous, input and weight gradients, batch 8, 1
thread (Xeon, session 36)::

    depthwise 3x3, 2x2 - 32x32 planes ............ 1.8x - 8.8x   channels-last
    1x1 ............................................ 0.9x - 3.1x   channels-last
    dense, dy's plane of at most a quarter as many
        pixels as channels (512 ch at 2x2 - 4x4,
        256 at 4x4 - 8x8) ........................ 0.26x - 0.9x  contiguous
    dense otherwise (64 - 128 ch at 16x16 - 64x64,
        the 7x7 stem) ............................ 0.97x - 1.5x  channels-last
"""

from __future__ import annotations

from tessera.compiler.targets.x86.conv_kernel_model import CHANNELWISE_GROUPS_SPEEDUP, channelwise_groups
from tessera.passes.target_models import ConvShape, Rule, any_conv, table_prefers_channels_last

CONV_LAYOUTS = (
    Rule("conv1d", lambda c: c.spatial == 1, 1.0),
    Rule("bf16/f16 conv", lambda c: c.half, 1.5),
    Rule("f32 conv3d", lambda c: c.spatial == 3, 1.13),
    Rule("f32 grouped conv2d, 8-15 channels per group (tessera's kernel, channels-last)",
         lambda c: c.groups > 1 and not c.depthwise and 8 <= c.channels_per_group < 16, 1.08 * 1.28),
    Rule("f32 grouped conv2d, 2 or 4 channels per group (tessera's channelwise kernel, channels-last)",
         channelwise_groups, 1.08 * CHANNELWISE_GROUPS_SPEEDUP),
    Rule("f32 grouped conv2d, < 16 channels per group",
         lambda c: c.groups > 1 and not c.depthwise and c.channels_per_group < 16, 1.08),
    Rule("f32 dense 3x3 conv2d, >= 128 input channels, stride 1 (Winograd's class)",
         lambda c: c.groups == 1 and c.kernel == (3, 3) and max(c.stride) == 1 and c.in_channels >= 128, 1.1),
    Rule("f32 dense wider conv2d, >= 128 input channels",
         lambda c: c.groups == 1 and max(c.kernel) > 1 and max(c.stride) == 1 and c.in_channels >= 128, 1.00),
    Rule("f32 conv2d", any_conv, 1.15),
)

CONV_BACKWARD_LAYOUTS = (
    Rule("depthwise conv2d", lambda c: c.depthwise, 2.0),
    Rule("1x1 conv", lambda c: c.pointwise, 1.4),
    Rule("dense conv, dy's plane of at most a quarter as many pixels as channels",
         lambda c: c.groups == 1 and c.points is not None and 4 * c.points <= max(c.in_channels, c.out_channels), 0.45),
    Rule("conv", any_conv, 1.2),
)


def backward_channels_last(conv: ConvShape) -> bool:
    """Whether the library's backward of ``conv`` runs channels-last on x86 (the table above),
    for a choice made when a gradient op runs (``conv_input_grad``) rather than in ``assign-layouts``."""
    return bool(table_prefers_channels_last(CONV_BACKWARD_LAYOUTS, conv))
