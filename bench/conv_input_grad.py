"""A conv's input gradient: oneDNN's (ATen's ``convolution_backward``, ``dy`` channels-last
and contiguous) against ``tessera.conv_input_grad`` (tessera's kernel, the weight flipped
and transposed as it is packed, on every call; called as a host program calls it, not
through the dispatcher), per stride-1 conv, batch ``--batch``.

    .venv/bin/python bench/conv_input_grad.py [--threads 1] [--batch 8] [--shapes 64,64,3,8 ...]

The data behind ``conv_input_grad.takes`` (a weight that outweighs ``dx`` stays oneDNN's).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conv_default_calls import median_ms  # noqa: E402

from tessera.compiler.conv_input_grad import HOST_FUNCTIONS  # noqa: E402

aten = torch.ops.aten

SHAPES = [  # C_in, C_out, kernel, spatial of the forward conv
    (64, 64, 3, 16), (128, 128, 3, 8), (256, 256, 3, 4), (512, 512, 3, 2), (64, 64, 3, 8), (32, 32, 3, 16),
    (64, 32, 3, 16), (32, 3, 3, 16), (4, 64, 3, 8), (128, 128, 3, 16), (64, 64, 3, 32), (256, 256, 3, 8),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--shapes", action="append", default=None, help="C_in,C_out,kernel,spatial (repeatable)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    shapes = [tuple(map(int, t.split(","))) for t in a.shapes] if a.shapes else SHAPES
    own = HOST_FUNCTIONS["tessera.conv_input_grad.default"]
    print(f"torch {torch.__version__}, {a.threads} threads, batch {a.batch}, medians of {a.reps}")
    print("| forward conv | weight / dx elements | oneDNN dy CL ms | oneDNN dy NCHW ms | tessera dy CL ms "
          "| tessera dy NCHW ms |\n| --- | --- | --- | --- | --- | --- |")
    for ci, co, k, hw in shapes:
        w, p = torch.randn(co, ci, k, k), k // 2
        ho = hw + 2 * p - k + 1
        x = torch.empty(a.batch, ci, hw, hw)
        ms = []
        for library in (True, False):
            for fmt in (torch.channels_last, torch.contiguous_format):
                dy = torch.randn(a.batch, co, ho, ho).contiguous(memory_format=fmt)
                xf = x.contiguous(memory_format=fmt)
                if library:
                    ms.append(median_ms(lambda: aten.convolution_backward(
                        dy, xf, w, None, [1, 1], [p, p], [1, 1], False, [0, 0], 1, [True, False, False]), a.reps))
                else:
                    cl = fmt == torch.channels_last
                    ms.append(median_ms(lambda: own(dy, w, [p, p], [1, 1], cl), a.reps))
        ratio = w.numel() / math.prod(x.shape)
        print(f"| {ci}->{co} {k}x{k} at {hw}x{hw} | {ratio:.2f} | " + " | ".join(f"{m:.3f}" for m in ms) + " |",
              flush=True)


if __name__ == "__main__":
    main()
