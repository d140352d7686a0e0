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
    .venv/bin/python bench/conv_default_calls.py --frames 3 --shapes 32,32,3,8,1   # conv3d, 3 input frames

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


def median_ms(f, reps: int) -> float:
    """The median of ``reps`` calls of ``f`` after two, in ms."""
    f()
    f()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return sorted(times)[reps // 2] * 1e3


def _tessera(xc, w, b, p, s, per_call: bool) -> object:
    """tessera's kernel on this host's widest path, its weight packed on every call
    (``per_call``) or once."""
    spec = ConvSpec(xc.shape[0], xc.shape[1], w.shape[0], tuple(xc.shape[2:]), tuple(w.shape[2:]), tuple(s), tuple(p),
                    1, 1, bias=True, isa=select_conv_isa())
    kernel, pack = load_conv(spec), weight_packer(spec)
    kept = torch.empty_strided(spec.output_shape(), spec.output_strides())
    packed = pack(w)
    kernel(xc, packed, b, kept)  # checked once, as a program's first run does
    if per_call:
        return lambda: kernel.launch_trusted([xc, pack(w), b, kept])
    return lambda: kernel.launch_trusted([xc, packed, b, kept])


def _calls(x, w, b, p, s, d) -> list:
    """The seven calls of one conv (see the module docstring), in table order."""
    xc = x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    packed = torch.ops.mkldnn._reorder_convolution_weight(w, p, s, d, 1, list(x.shape))
    out_pad = [0] * len(s)
    return [
        lambda: torch.ops.aten.convolution(x, w, b, s, p, d, False, out_pad, 1),
        lambda: torch.ops.aten.convolution(xc, w, b, s, p, d, False, out_pad, 1),
        lambda: torch.ops.aten.mkldnn_convolution(x, w, b, p, s, d, 1),
        lambda: torch.ops.mkldnn._convolution_pointwise(xc, w, b, p, s, d, 1, "none", [], ""),
        lambda: torch.ops.mkldnn._convolution_pointwise(xc, packed, b, p, s, d, 1, "none", [], ""),
        _tessera(xc, w, b, p, s, per_call=True),
        _tessera(xc, w, b, p, s, per_call=False),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--shapes", action="append", default=None,
                    help="C_in,C_out,kernel,spatial,stride (repeatable; default: ResNet-50's)")
    ap.add_argument("--frames", type=int, default=0,
                    help="conv3d of this many input frames (a kernel of kernel^3, padding kernel//2; default: conv2d)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    shapes = [tuple(map(int, t.split(","))) for t in a.shapes] if a.shapes else SHAPES
    print(f"torch {torch.__version__}, {a.threads} threads, batch {a.batch}, medians of {a.reps}")
    print("| conv | weight / output elements | ATen NCHW ms | ATen CL ms | mkldnn NCHW ms | oneDNN CL plain weight ms "
          "| oneDNN CL packed ms | tessera packed per call ms | tessera packed once ms |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    frames = (a.frames,) if a.frames else ()
    rank = 2 + len(frames)
    with torch.no_grad():
        for ci, co, k, hw, st in shapes:
            x, w, b = torch.randn(a.batch, ci, *frames, hw, hw), torch.randn(co, ci, *[k] * rank), torch.randn(co)
            p, s, d = [k // 2] * rank, [st] * rank, [1] * rank
            out = torch.ops.aten.convolution(x, w, b, s, p, d, False, [0] * rank, 1)
            ms = [median_ms(call, a.reps) for call in _calls(x, w, b, p, s, d)]
            ratio = w.numel() / math.prod(out.shape)
            window = "x".join([str(k)] * rank)
            at = "x".join(map(str, (*frames, hw, hw)))
            print(f"| {ci}->{co} {window} s{st} at {at} | {ratio:.1f} | " + " | ".join(f"{m:.3f}" for m in ms) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
