"""The conv calls a graph can make when weights are read afresh on every call
(no ``freezing``), per conv of ResNet-50's shapes at batch 1: ATen's
``convolution`` on NCHW and on channels-last input (eager's own calls, which
read the plain weight), oneDNN's ``mkldnn_convolution`` (NCHW) and its
pointwise call on channels-last input with a plain weight (reordered on every
call), the pointwise call with the weight packed once (for reference), and
tessera's own kernel with its weight packed on every call by its packing kernel
(what a program without ``freezing`` launches), writing a kept output.

    .venv/bin/python bench/conv_default_calls.py [--threads 1] [--reps 30]
    .venv/bin/python bench/conv_default_calls.py --batch 8 --shapes 64,64,3,8,1 --shapes 32,32,3,16,1

The data behind ``target_models.PER_CALL_WEIGHT_BOUND``: the ratio of weight
to output elements past which a per-call reorder or packing dominates.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from tessera.compiler.targets.x86.conv import ConvSpec, select_conv_isa
from tessera.compiler.targets.x86.conv.api import load_conv, weight_packer

SHAPES = [  # (C_in, C_out, kernel, spatial, stride)
    (2048, 512, 1, 2, 1), (512, 2048, 1, 2, 1), (512, 512, 3, 2, 1), (1024, 256, 1, 4, 1), (256, 256, 3, 4, 1),
    (64, 64, 3, 16, 1), (256, 64, 1, 16, 1), (64, 256, 1, 56, 1), (512, 512, 3, 7, 1), (2048, 512, 1, 7, 1),
    (128, 128, 3, 28, 1), (256, 256, 3, 14, 1), (3, 64, 7, 224, 2), (256, 512, 1, 56, 2), (128, 128, 3, 56, 2),
]


def _median_ms(f, reps: int) -> float:
    f()
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def _tessera_per_call(xc, w, b, p, s) -> object:
    """tessera's kernel on this host's widest path, its weight packed on every call."""
    spec = ConvSpec(xc.shape[0], xc.shape[1], w.shape[0], tuple(xc.shape[2:]), tuple(w.shape[2:]), tuple(s), tuple(p),
                    1, 1, bias=True, isa=select_conv_isa())
    kernel, pack = load_conv(spec), weight_packer(spec)
    kept = torch.empty_strided(spec.output_shape(), spec.output_strides())
    kernel(xc, pack(w), b, kept)  # checked once, as a program's first run does
    return lambda: kernel.launch_trusted([xc, pack(w), b, kept])


def _calls(x, w, b, p, s, d) -> list:
    """The six calls of one conv (see the module docstring), in table order."""
    xc = x.contiguous(memory_format=torch.channels_last)
    packed = torch.ops.mkldnn._reorder_convolution_weight(w, p, s, d, 1, list(x.shape))
    return [
        lambda: torch.ops.aten.convolution(x, w, b, s, p, d, False, [0, 0], 1),
        lambda: torch.ops.aten.convolution(xc, w, b, s, p, d, False, [0, 0], 1),
        lambda: torch.ops.aten.mkldnn_convolution(x, w, b, p, s, d, 1),
        lambda: torch.ops.mkldnn._convolution_pointwise(xc, w, b, p, s, d, 1, "none", [], ""),
        lambda: torch.ops.mkldnn._convolution_pointwise(xc, packed, b, p, s, d, 1, "none", [], ""),
        _tessera_per_call(xc, w, b, p, s),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--shapes", action="append", default=None,
                    help="C_in,C_out,kernel,spatial,stride (repeatable; default: ResNet-50's)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    shapes = [tuple(map(int, t.split(","))) for t in a.shapes] if a.shapes else SHAPES
    print(f"torch {torch.__version__}, {a.threads} threads, batch {a.batch}, medians of {a.reps}")
    print("| conv | weight / output elements | ATen NCHW ms | ATen CL ms | mkldnn NCHW ms | oneDNN CL plain weight ms "
          "| oneDNN CL packed ms | tessera packed per call ms |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    with torch.no_grad():
        for ci, co, k, hw, st in shapes:
            x, w, b = torch.randn(a.batch, ci, hw, hw), torch.randn(co, ci, k, k), torch.randn(co)
            p, s, d = [k // 2] * 2, [st, st], [1, 1]
            out = torch.ops.aten.convolution(x, w, b, s, p, d, False, [0, 0], 1)
            ms = [_median_ms(call, a.reps) for call in _calls(x, w, b, p, s, d)]
            ratio = w.numel() / math.prod(out.shape)
            print(f"| {ci}->{co} {k}x{k} s{st} at {hw}x{hw} | {ratio:.1f} | " + " | ".join(f"{m:.3f}" for m in ms) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
