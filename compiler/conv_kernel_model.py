"""Which convolutions run on tessera's own kernel (``codegen/conv``) rather than
oneDNN's, per shape class: a measured cost model, asked once per ``tsr.conv``
by the host program.

The competitor is what the host program calls otherwise: oneDNN's
``mkldnn._convolution_pointwise`` with the weight reordered once (the call of
``OneDnnConv``, and Inductor's under freezing), channels-last. Both read and
write channels-last f32, bias fused. The rule is a list of (shape class,
measured speedup of tessera over that call) tried in order; the first class
that matches decides, and tessera's kernel is used when the speedup is at
least ``MIN_GAIN`` (below it the two are within this machine's noise, and the
library stays).

x86, Xeon (Sapphire Rapids class, AVX-512, in a VM), fp32, 1 thread timed
with the thread's CPU clock (``bench/conv_kernels.py --threads 1 --cpu-time``,
two runs; the 2-thread figures of that shared machine were not trustworthy);
GFLOP/s tessera / oneDNN prepacked (run 1; run 2), the 1-thread FMA peak
being 134-156::

    f32 only (the kernels compute f32) ..................................... -      oneDNN
    depthwise 3-D (3x3x3, 64 ch, 4x32x32) .... 23.8/37.3; 33.6/46.5      0.64x-0.72x  oneDNN
    depthwise 2-D (3x3, 256 ch, 56x56) ....... 16.0/16.2; 20.9/27.3      0.77x-0.99x  oneDNN
    grouped, 16 ch per group (g=8, 128 ch) ... 55.6/58.7; 85.4/90.1      0.95x        oneDNN
    C_in/groups < 16 (3->64 at 224x224) ...... 34.8/71.1; 28.3/88.7      0.32x-0.49x  oneDNN
    1x1x1 conv3d (128->64, 4x32x32) .......... 44.1/52.1; 70.7/79.9      0.85x-0.88x  oneDNN
    1x1 conv2d 256->256 56x56 ................ 100/95.4;  102/99.3      1.03x-1.05x
    1x1 conv2d 256->64 56x56 ................. 67.9/62.2; 81.6/87.1     0.94x-1.09x  oneDNN (mean 1.03x)
    3x3 / 3x3x3, >= 16 ch per group:
      conv3d 96->96 1x96x5x26x26 ............. 115/122;   119/123      0.94x-0.97x
      conv2d 128->128 64x64 p1 ............... 117/122;   123/127      0.96x-0.97x
      VAE conv1/2 64->64 1x64x6x34x34 ........ 106/113;   119/120      0.94x-0.99x
      VAE conv_up 64->64 1x64x4x64x64 p1 ..... 145/154;   150/158      0.94x-0.95x
      conv2d 64->128 stride 2 ................ 88.9/94.5; 92.0/107     0.86x-0.94x
      conv2d 128->128 batch 4 32x32 .......... 85.0/93.6; 121/124      0.91x-0.98x  oneDNN

So on this AVX-512 host no shape class clears ``MIN_GAIN``: tessera's kernel
runs the 3x3 convs at 70-96% of the FMA peak, oneDNN's AVX-512 kernel at
75-100%, both 2-6x ATen eager's conv3d (``slow_conv3d``). Fused epilogues do
not change that yet (conv + bias + residual + SiLU in one tessera kernel:
114-116 GFLOP/s against 117-118 for oneDNN's conv followed by eager
``add``/``silu_``; 86 against 82 for the 1x1 conv). Every rule below is
measured; the host program asks :func:`prefers_tessera` and so keeps calling
oneDNN until a rule's speedup reaches ``MIN_GAIN`` (a faster kernel, or a
host where the library is weaker: the issue's AVX2 machine, not measured
here).

    >>> prefers_tessera("x86", ConvShape(spatial=3, dtype="f32", in_channels=96, out_channels=96,
    ...     groups=1, kernel=(3, 3, 3), stride=(1, 1, 1)))
    False
"""

from __future__ import annotations

from .conv_layout_model import ConvShape, Rule, first_rule

MIN_GAIN = 1.05


X86_RULES = (
    Rule("not f32", lambda c: c.dtype != "f32", 0.0),
    Rule("1-D conv (no kernel)", lambda c: c.spatial not in (2, 3), 0.0),
    Rule("depthwise 3-D", lambda c: c.depthwise and c.spatial == 3, 0.68),
    Rule("depthwise 2-D", lambda c: c.depthwise, 0.88),
    Rule("grouped", lambda c: c.groups > 1, 0.95),
    Rule("C_in/groups < 16", lambda c: c.channels_per_group < 16, 0.40),
    Rule("1x1x1 conv3d", lambda c: c.pointwise and c.spatial == 3, 0.87),
    Rule("1x1 conv2d", lambda c: c.pointwise, 1.03),
    Rule("3x3 / 3x3x3 and larger windows", lambda c: True, 0.95),
)

RULES: dict[str, tuple[Rule, ...]] = {"x86": X86_RULES}


def rule_for(target: str, conv: ConvShape) -> Rule | None:
    """The measured class of ``conv`` (speedup: tessera's kernel over oneDNN's prepacked call)."""
    return first_rule(RULES.get(target, ()), conv)


def prefers_tessera(target: str, conv: ConvShape) -> bool:
    """Whether ``conv`` should run on tessera's kernel on ``target`` (only x86 has one)."""
    rule = rule_for(target, conv)
    return rule is not None and rule.speedup >= MIN_GAIN
