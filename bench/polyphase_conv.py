"""What ``fold-upsample-into-conv`` buys: a 3x3(x3) conv of a 2x nearest
upsample, as written (upsample, then oneDNN's packed channels-last conv) and
as tessera compiles it (pad the small tensor, one polyphase conv with 4x the
output channels and 2x2 taps, interleave), compiled by tessera both ways and
timed interleaved in one process.

    .venv/bin/python bench/polyphase_conv.py [--threads 2] [--reps 20]

Prints a Markdown table: ms of each, the speedup, and the FLOP ratio the pass
computes (``passes/fold_upsample_into_conv.py``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from tessera.dialects.tsr.ops_polyphase import PolyphaseDim

SHAPES = {  # name: (input NC(D)HW, scale)
    "video VAE conv_up 64ch 1x64x4x32x32": ((1, 64, 4, 32, 32), (1.0, 2.0, 2.0)),
    "2-D VAE conv_up 128ch 1x128x32x32": ((1, 128, 32, 32), 2.0),
    "2-D 64ch 1x64x64x64": ((1, 64, 64, 64), 2.0),
}


class UpConv(nn.Module):
    def __init__(self, channels: int, dims: int, scale):
        super().__init__()
        self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(channels, channels, 3, padding=1)
        self.scale = scale

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=self.scale, mode="nearest"))


def flop_ratio(shape, scale) -> float:
    """The polyphase conv's multiply-adds over the original's (3-tap kernels, padding 1)."""
    scales = [int(s) for s in (scale if isinstance(scale, tuple) else (scale,) * (len(shape) - 2))]
    dims = [PolyphaseDim(s, 3, 1) for s in scales]
    before = math.prod(s * n for s, n in zip(scales, shape[2:])) * 3 ** len(dims)
    after = math.prod(d.scale * d.taps * d.conv_size(n) for d, n in zip(dims, shape[2:]))
    return after / before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}")
    print("| conv | as written (ms) | polyphase (ms) | speedup | FLOP ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, (shape, scale) in SHAPES.items():
        torch.manual_seed(0)
        model = UpConv(shape[1], len(shape) - 2, scale).eval()
        x = torch.randn(shape)
        with torch.no_grad():
            torch._dynamo.reset()
            polyphase = torch.compile(model, backend="tessera", options={"freezing": True})
            plain = torch.compile(model, backend="tessera", options={"disable": ("fold-upsample-into-conv",), "freezing": True})
            ref = model(x)
            for fn in (plain, polyphase):
                torch.testing.assert_close(fn(x), ref, rtol=1e-4, atol=1e-4)
            times = {"plain": [], "poly": []}
            for _ in range(args.reps):
                for key, fn in (("plain", plain), ("poly", polyphase)):
                    start = time.perf_counter()
                    fn(x)
                    times[key].append(time.perf_counter() - start)
        a, b = (statistics.median(times[k]) * 1e3 for k in ("plain", "poly"))
        ratio = flop_ratio(shape, scale)
        print(f"| {name} | {a:.2f} | {b:.2f} | {a / b:.2f}x | {ratio:.2f} |")


if __name__ == "__main__":
    main()
