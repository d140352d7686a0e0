"""tessera's own fp32 conv kernels against ATen, oneDNN and Inductor, in one run.

    .venv/bin/python bench/conv_kernels.py [--threads 2] [--reps 15] [--only 3x3] [--no-inductor]

Per shape, every candidate is timed interleaved round by round in this one
process (medians after warm-up; GFLOP/s = 2 * MACs / time, the epilogue not
counted):

* ``tessera``: the kernel as a compiled program launches it: the weight
  packed once, input and output channels-last, bias fused, the output a
  buffer kept between calls (the program's allocations are), the launch
  trusted after the first call's check; the host's widest path (AVX-512
  here). ``tessera avx2`` is the ymm build on the same host.
* ``tessera winograd4`` / ``tessera winograd2``: Winograd F(4x4, 3x3) and F(2x2, 3x3)
  (``targets/x86/conv/winograd.py``) where the conv is one they compute (2-D 3x3
  stride 1), the weight transformed and packed once, launched as a program does.
* ``aten NCHW`` / ``aten CL``: ``F.conv2d``/``F.conv3d`` eager in the
  contiguous and the channels-last layout (ATen picks oneDNN or
  ``slow_conv3d``).
* ``onednn prepacked``: ``torch.ops.mkldnn._convolution_pointwise`` with the
  weight reordered once, channels-last: what tessera's host program calls
  today (``OneDnnConv``), and Inductor's call under freezing.
* ``inductor`` and ``inductor freeze``: ``torch.compile`` of the ``nn.Conv``
  module under ``torch.no_grad()``, the latter with
  ``torch._inductor.config.freezing = True``; contiguous input, as a user
  passes it.

The fp32 FMA peak is measured first (``bench/fma_peak.py``), and tessera is
reported as a percentage of it. Shared machines are noisy: a 1024^3
``torch.mm`` must run 1.6-1.9x faster on 2 threads than on 1 for a 2-thread
figure to be trusted; the check is printed. On a busy machine, ``--threads 1
--cpu-time`` times with the calling thread's CPU clock (every candidate runs
on the calling thread then), which other processes do not inflate. Timing is
never a test.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fma_peak import peak_gflops  # noqa: E402

from tessera.compiler.targets.x86.conv import ConvSpec, can_run_conv, pack_weight, select_conv_isa  # noqa: E402
from tessera.compiler.targets.x86.conv.api import load_conv  # noqa: E402
from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker  # noqa: E402
from tessera.compiler.targets.x86.conv.winograd_spec import winograd_fits  # noqa: E402

# (label, input shape, out channels, kernel, stride, padding, groups)
SHAPES = [
    ("conv3d 3x3x3 96->96 1x96x5x26x26 (pre-padded)", (1, 96, 5, 26, 26), 96, 3, 1, 0, 1),
    ("conv2d 3x3 128->128 1x128x64x64 p1", (1, 128, 64, 64), 128, 3, 1, 1, 1),
    ("conv2d 1x1 256->256 1x256x56x56", (1, 256, 56, 56), 256, 1, 1, 0, 1),
    ("conv2d 3x3 depthwise 256 1x256x56x56 p1", (1, 256, 56, 56), 256, 3, 1, 1, 256),
    # the convs of examples/video_vae_block.py at its benchmark() size (1x64x4x32x32)
    ("VAE conv1/conv2 3x3x3 64->64 1x64x6x34x34", (1, 64, 6, 34, 34), 64, 3, 1, 0, 1),
    ("VAE conv_up 3x3x3 64->64 1x64x4x64x64 p1", (1, 64, 4, 64, 64), 64, 3, 1, 1, 1),
    # more shape classes for the cost model (compiler/targets/x86/conv_kernel_model.py)
    ("conv2d 3x3 64->64 1x64x64x64 p1", (1, 64, 64, 64), 64, 3, 1, 1, 1),
    ("conv2d 3x3 64->128 s2 1x64x64x64 p1", (1, 64, 64, 64), 128, 3, 2, 1, 1),
    ("conv2d 3x3 3->64 1x3x224x224 p1", (1, 3, 224, 224), 64, 3, 1, 1, 1),
    ("stem 3x3 s2 3->32 1x3x224x224 p1", (1, 3, 224, 224), 32, 3, 2, 1, 1),   # MobileNetV2, EfficientNet
    ("stem 7x7 s2 3->64 1x3x224x224 p3", (1, 3, 224, 224), 64, 7, 2, 3, 1),   # ResNet
    ("stem 7x7 s2 3->96 1x3x224x224", (1, 3, 224, 224), 96, 7, 2, 0, 1),      # SqueezeNet 1.0
    ("stem 4x4 s4 3->96 1x3x224x224", (1, 3, 224, 224), 96, 4, 4, 0, 1),      # ConvNeXt's patchify
    ("stem 3x3 4->512 1x4x64x64 p1", (1, 4, 64, 64), 512, 3, 1, 1, 1),        # an SD VAE decoder's conv_in
    ("stem 3x3 8->64 1x8x64x64 p1", (1, 8, 64, 64), 64, 3, 1, 1, 1),
    ("conv2d 1x1 256->64 1x256x56x56", (1, 256, 56, 56), 64, 1, 1, 0, 1),
    ("conv2d 3x3 128->128 g8 1x128x64x64 p1", (1, 128, 64, 64), 128, 3, 1, 1, 8),
    ("conv3d 1x1x1 128->64 1x128x4x32x32", (1, 128, 4, 32, 32), 64, 1, 1, 0, 1),
    ("conv3d 3x3x3 depthwise 64 1x64x4x32x32 p1", (1, 64, 4, 32, 32), 64, 3, 1, 1, 64),
    ("conv2d 3x3 128->128 4x128x32x32 p1", (4, 128, 32, 32), 128, 3, 1, 1, 1),
    # RegNetY-400MF's grouped 3x3 convs: 8 channels per group
    ("regnety grouped 3x3 8/group 48 g6 1x48x56x56 p1", (1, 48, 56, 56), 48, 3, 1, 1, 6),
    ("regnety grouped 3x3 8/group 104 g13 1x104x28x28 p1", (1, 104, 28, 28), 104, 3, 1, 1, 13),
    ("regnety grouped 3x3 8/group 208 g26 1x208x14x14 p1", (1, 208, 14, 14), 208, 3, 1, 1, 26),
    ("regnety grouped 3x3 8/group 440 g55 1x440x7x7 p1", (1, 440, 7, 7), 440, 3, 1, 1, 55),
    ("regnety grouped 3x3 8/group s2 104 g13 1x104x56x56 p1", (1, 104, 56, 56), 104, 3, 2, 1, 13),
    # ResNeXt-50 32x4d's grouped 3x3 convs: 4, 8 and 16 channels per group
    ("resnext 3x3 4/group 128 g32 1x128x56x56 p1", (1, 128, 56, 56), 128, 3, 1, 1, 32),
    ("resnext 3x3 8/group 256 g32 1x256x28x28 p1", (1, 256, 28, 28), 256, 3, 1, 1, 32),
    ("resnext 3x3 16/group 512 g32 1x512x14x14 p1", (1, 512, 14, 14), 512, 3, 1, 1, 32),
    # squeeze-excite expansions: one output point (EfficientNet, RegNetY, MobileNetV3)
    ("squeeze-excite 1x1 8->32 1x8x1x1", (1, 8, 1, 1), 32, 1, 1, 0, 1),
    ("squeeze-excite 1x1 4->96 1x4x1x1", (1, 4, 1, 1), 96, 1, 1, 0, 1),
    ("squeeze-excite 1x1 48->1152 1x48x1x1", (1, 48, 1, 1), 1152, 1, 1, 0, 1),
    # polyphase convs (fold-upsample-into-conv: a 3x3 conv after a 2x nearest upsample): the SD decoder's
    ("polyphase 2x2 512->2048 1x512x66x66", (1, 512, 66, 66), 2048, 2, 1, 0, 1),
    ("polyphase 2x2 256->1024 1x256x130x130", (1, 256, 130, 130), 1024, 2, 1, 0, 1),
    ("polyphase 2x2 128->512 1x128x34x34", (1, 128, 34, 34), 512, 2, 1, 0, 1),
    # Winograd's classes by input channels (conv_kernel_model.prefers_winograd)
    ("conv2d 3x3 16->16 1x16x64x64 p1", (1, 16, 64, 64), 16, 3, 1, 1, 1),
    ("conv2d 3x3 32->32 1x32x64x64 p1", (1, 32, 64, 64), 32, 3, 1, 1, 1),
    ("conv2d 3x3 256->256 1x256x7x7 p1", (1, 256, 7, 7), 256, 3, 1, 1, 1),
    ("conv2d 3x3 64->64 1x64x13x13 p1", (1, 64, 13, 13), 64, 3, 1, 1, 1),
    # ResNet-50's stride-1 3x3 convs (layers 1-4) at 224x224, batch 1
    ("resnet50 3x3 64->64 1x64x56x56 p1", (1, 64, 56, 56), 64, 3, 1, 1, 1),
    ("resnet50 3x3 128->128 1x128x28x28 p1", (1, 128, 28, 28), 128, 3, 1, 1, 1),
    ("resnet50 3x3 256->256 1x256x14x14 p1", (1, 256, 14, 14), 256, 3, 1, 1, 1),
    ("resnet50 3x3 512->512 1x512x7x7 p1", (1, 512, 7, 7), 512, 3, 1, 1, 1),
]


CLOCK = time.perf_counter


def _time(fn: Callable[[], object]) -> float:
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


def thread_scaling(threads: int) -> float:
    """1024^3 ``torch.mm``: time on 1 thread / time on ``threads`` threads."""
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    out = {}
    for t in (1, threads):
        torch.set_num_threads(t)
        torch.mm(a, b)
        out[t] = statistics.median(_time(lambda: torch.mm(a, b)) for _ in range(7))
    torch.set_num_threads(threads)
    return out[1] / out[threads]


def candidates(shape, cout, k, stride, padding, groups, inductor: bool) -> tuple[ConvSpec, dict[str, Callable[[], object]]]:
    nsp = len(shape) - 2
    conv_cls = nn.Conv2d if nsp == 2 else nn.Conv3d
    fn = F.conv2d if nsp == 2 else F.conv3d
    cl = torch.channels_last if nsp == 2 else torch.channels_last_3d
    torch.manual_seed(0)
    mod = conv_cls(shape[1], cout, k, stride=stride, padding=padding, groups=groups).eval()
    w, b = mod.weight.detach(), mod.bias.detach()
    x = torch.randn(shape)
    x_cl = x.contiguous(memory_format=cl)
    out: dict[str, Callable[[], object]] = {}
    best = select_conv_isa()
    isas = [best] + (["avx2"] if best != "avx2" and can_run_conv("avx2") else [])
    specs = {isa: ConvSpec(shape[0], shape[1], cout, shape[2:], (k,) * nsp, stride, padding, 1, groups, bias=True, isa=isa)
             for isa in isas}
    for isa, s in specs.items():
        pw = pack_weight(w, s)
        kernel = load_conv(s)
        kept = torch.empty_strided(s.output_shape(), s.output_strides())
        kernel(x_cl, pw.data, b, kept)  # checked once, as a program's first run does
        out["tessera" if isa == best else f"tessera {isa}"] = (
            lambda k=kernel, pw=pw, kept=kept: k.launch_trusted([x_cl, pw.data, b, kept]) or kept)
    spec = specs[best]
    if winograd_fits(spec):
        for m in (4, 2):  # Winograd F(m x m, 3x3): the weight transformed and packed once
            conv = WinogradConv(spec, m)
            pw_m = WinogradPacker(conv.ws)(w)
            kept = torch.empty_strided(spec.output_shape(), spec.output_strides())
            conv(x_cl, pw_m, b, kept)
            out[f"tessera winograd{m}"] = (
                lambda c=conv, pw=pw_m, kept=kept: c.launch_trusted([x_cl, pw, b, kept]) or kept)
    kw = dict(stride=stride, padding=padding, groups=groups)
    out["aten NCHW"] = lambda: fn(x, w, b, **kw)
    out["aten CL"] = lambda: fn(x_cl, w, b, **kw)
    pad, st, dil = [padding] * nsp, [stride] * nsp, [1] * nsp
    packed = torch.ops.mkldnn._reorder_convolution_weight(w, pad, st, dil, groups, list(shape))
    out["onednn prepacked"] = lambda: torch.ops.mkldnn._convolution_pointwise(x_cl, packed, b, pad, st, dil, groups,
                                                                              "none", [], "")
    if inductor:
        import torch._inductor.config as icfg

        torch._dynamo.reset()
        out["inductor"] = torch.compile(mod)
        with torch.no_grad():
            out["inductor"](x)
        frozen = conv_cls(shape[1], cout, k, stride=stride, padding=padding, groups=groups).eval()
        frozen.load_state_dict(mod.state_dict())
        with _freezing(icfg):
            comp = torch.compile(frozen)
            with torch.no_grad():
                comp(x)
        out["inductor freeze"] = lambda comp=comp: comp(x)
        ind = out["inductor"]
        out["inductor"] = lambda ind=ind: ind(x)
    return spec, out


@contextlib.contextmanager
def _freezing(icfg):
    old = icfg.freezing
    icfg.freezing = True
    try:
        yield
    finally:
        icfg.freezing = old


def check_exact(spec: ConvSpec, cands: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Per tessera candidate: max |its result - aten NCHW| relative to the output's
    scale (~1e-6 direct, ~1e-5 Winograd F(4x4))."""
    with torch.no_grad():
        want = cands["aten NCHW"]()
        return {n: ((fn() - want).abs().max() / want.abs().max()).item()
                for n, fn in cands.items() if n.startswith("tessera") and "avx2" not in n}


def run(reps: int, threads: int, inductor: bool, only: str | None) -> None:
    print(f"machine: {torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}, {threads} threads")
    scaling = thread_scaling(threads)
    verdict = "ok" if 1.6 <= scaling <= 1.95 else "NOT TRUSTED: the cores are busy"
    print(f"thread check: 1024^3 torch.mm {scaling:.2f}x faster on {threads} threads than on 1 ({verdict})")
    lanes = 16 if select_conv_isa() == "avx512" else 8
    peak1 = peak_gflops(lanes, 1, 1_000_000)
    peak = peak_gflops(lanes, threads, 1_000_000)
    print(f"fp32 FMA peak ({'zmm' if lanes == 16 else 'ymm'}): {peak1:.1f} GFLOP/s on 1 thread, {peak:.1f} on {threads}")
    torch.set_num_threads(threads)
    summary = []
    for label, shape, cout, k, stride, padding, groups in SHAPES:
        if only and only not in label:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec, cands = candidates(shape, cout, k, stride, padding, groups, inductor)
        err = check_exact(spec, cands)
        times: dict[str, list[float]] = {n: [] for n in cands}
        with torch.no_grad():
            for fn in cands.values():
                fn()
            for _ in range(reps):
                for n, fn in cands.items():
                    times[n].append(_time(fn))
        gf = {n: spec.flops / statistics.median(ts) / 1e9 for n, ts in times.items()}
        errors = ", ".join(f"{n} {e:.1e}" for n, e in err.items())
        print(f"\n## {label}  ({spec.flops / 1e9:.3f} GFLOP; max rel. error against eager: {errors})")
        print(f"{'':<20} {'median ms':>10} {'GFLOP/s':>8} {'min-max GFLOP/s':>16}")
        for n, ts in times.items():
            extra = f"  {100 * gf[n] / peak:.0f}% of {threads}-thread peak" if n.startswith("tessera") else ""
            print(f"{n:<20} {statistics.median(ts) * 1e3:>10.3f} {gf[n]:>8.1f} "
                  f"{spec.flops / max(ts) / 1e9:>7.1f}-{spec.flops / min(ts) / 1e9:<8.1f}{extra}")
        peers = [p for p in ("aten NCHW", "aten CL", "onednn prepacked", "inductor", "inductor freeze") if p in gf]
        print("tessera / " + ", ".join(f"{p} {gf['tessera'] / gf[p]:.2f}x" for p in peers))
        for n in (n for n in gf if n.startswith("tessera winograd")):
            print(f"{n} / " + ", ".join(f"{p} {gf[n] / gf[p]:.2f}x" for p in ["tessera", *peers]))
        summary.append((label, gf, peers))
    print(f"\n## summary (GFLOP/s, {threads} threads; tessera % of the {peak:.0f} GFLOP/s peak)")
    for label, gf, peers in summary:  # Winograd's GFLOP/s: the direct conv's FLOPs over its time
        wino = [n for n in gf if n.startswith("tessera winograd")]
        print(f"{label:<48} tessera {gf['tessera']:6.1f} ({100 * gf['tessera'] / peak:3.0f}%)  "
              + "  ".join(f"{p} {gf[p]:6.1f}" for p in [*wino, *peers]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--only", default=None, help="run the shapes whose label contains this text")
    p.add_argument("--no-inductor", action="store_true", help="skip torch.compile (minutes of compiling)")
    p.add_argument("--cpu-time", action="store_true",
                   help="time with the calling thread's CPU clock (needs --threads 1): robust on a busy machine")
    args = p.parse_args()
    if args.cpu_time:
        if args.threads != 1:
            p.error("--cpu-time measures the calling thread only: use it with --threads 1")
        global CLOCK
        CLOCK = time.thread_time
    torch.set_num_threads(args.threads)
    run(args.reps, args.threads, not args.no_inductor, args.only)


if __name__ == "__main__":
    main()
