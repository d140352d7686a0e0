"""Measures the library convolutions tessera calls on x86, contiguous against
channels-last, per dtype and shape class: the data behind
``each target's conv_layouts.py under compiler/targets``, the rule ``assign-layouts`` applies. A
contiguous conv runs ``aten.mkldnn_convolution`` (oneDNN, weight reordered per
call); a channels-last one ``mkldnn._convolution_pointwise`` with the weight
packed once (``compiler/library_calls.py``: with a packed weight oneDNN returns
channels-last whatever the input, so only channels-last convs use it). The
unpacked channels-last call is shown too. ATen's default dispatch
(``F.conv2d``/``F.conv3d``, contiguous) is shown for reference: for small-batch
fp32 conv3d it picks ``slow_conv3d_forward``.

    .venv/bin/python bench/conv_layouts.py [--threads N] [--dtypes f32,bf16]

Each row times the conv alone, both layouts interleaved in one process
(medians of several runs after warm-up); ratio > 1 means channels-last is
faster. The relayouts themselves are not timed: the layout passes hoist,
cancel and fuse them away inside conv chains.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

# (label, input shape N,C,spatial..., out channels, kernel, groups, stride)
SHAPES = [
    ("conv3d 3x3x3 32->32 4x32x32", (1, 32, 4, 32, 32), 32, 3, 1, 1),
    ("conv3d 3x3x3 64->64 4x32x32", (1, 64, 4, 32, 32), 64, 3, 1, 1),
    ("conv3d 3x3x3 96->96 5x26x26", (1, 96, 5, 26, 26), 96, 3, 1, 1),
    ("conv3d 1x1x1 128->64 4x32x32", (1, 128, 4, 32, 32), 64, 1, 1, 1),
    ("conv3d 3x3x3 3->32 first layer", (1, 3, 4, 64, 64), 32, 3, 1, 1),
    ("conv3d 3x3x3 64 depthwise", (1, 64, 4, 32, 32), 64, 3, 64, 1),
    ("conv2d 3x3 64->64 64x64", (1, 64, 64, 64), 64, 3, 1, 1),
    ("conv2d 3x3 128->128 64x64", (1, 128, 64, 64), 128, 3, 1, 1),
    ("conv2d 3x3 128->128 64x64 b4", (4, 128, 64, 64), 128, 3, 1, 1),
    ("conv2d 1x1 256->64 56x56", (1, 256, 56, 56), 64, 1, 1, 1),
    ("conv2d 3x3 64->128 s2 64x64", (1, 64, 64, 64), 128, 3, 1, 2),
    ("conv2d 3x3 3->64 first layer 224", (1, 3, 224, 224), 64, 3, 1, 1),
    ("conv2d 3x3 4->64 first layer 64", (1, 4, 64, 64), 64, 3, 1, 1),
    ("conv2d 3x3 128 depthwise 64x64", (1, 128, 64, 64), 128, 3, 128, 1),
    ("conv2d 3x3 128 g=32 (4/group)", (1, 128, 64, 64), 128, 3, 32, 1),
    ("conv2d 3x3 128 g=8 (16/group)", (1, 128, 64, 64), 128, 3, 8, 1),
    ("conv2d 3x3 128 g=2 (64/group)", (1, 128, 64, 64), 128, 3, 2, 1),
]

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def _median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure(shape, cout, k, groups, stride, dtype, reps=7):
    spatial = len(shape) - 2
    conv = F.conv3d if spatial == 3 else F.conv2d
    fmt = torch.channels_last_3d if spatial == 3 else torch.channels_last
    x = torch.randn(shape, dtype=dtype)
    w = torch.randn((cout, shape[1] // groups) + (k,) * spatial, dtype=dtype)
    b = torch.randn(cout, dtype=dtype)
    xc, wc = x.contiguous(memory_format=fmt), w.contiguous(memory_format=fmt)
    pad = k // 2
    st, pd, dl = [stride] * spatial, [pad] * spatial, [1] * spatial
    onednn = torch.ops.aten.mkldnn_convolution
    with torch.no_grad():
        packed = torch.ops.mkldnn._reorder_convolution_weight(w, pd, st, dl, groups, list(shape))
    runs = {
        "aten": lambda: conv(x, w, b, stride, pad, 1, groups),
        "contiguous": lambda: onednn(x, w, b, pd, st, dl, groups),
        "channels-last": lambda: onednn(xc, wc, b, pd, st, dl, groups),
        "channels-last packed": lambda: torch.ops.mkldnn._convolution_pointwise(
            xc, packed, b, pd, st, dl, groups, "none", [], ""),
    }
    with torch.no_grad():
        for f in runs.values():
            f(), f()
        ms = {name: [] for name in runs}
        for _ in range(3):  # interleave the two layouts
            for name, f in runs.items():
                ms[name].append(_median_ms(f, reps))
    return {name: min(v) for name, v in ms.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--only", default="", help="substring filter on the shape label")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, {a.threads} threads, mkldnn {torch.backends.mkldnn.is_available()}")
    print(f"{'shape':36s} {'dtype':5s} {'aten ms':>8s} {'oneDNN contig':>13s} {'oneDNN CL':>9s} {'CL packed':>9s} "
          f"{'CL speedup':>10s} {'packed CL speedup':>17s}")
    for label, shape, cout, k, groups, stride in SHAPES:
        if a.only not in label:
            continue
        for dname in a.dtypes.split(","):
            r = measure(shape, cout, k, groups, stride, DTYPES[dname])
            c, cl, pk = r["contiguous"], r["channels-last"], r["channels-last packed"]
            print(f"{label:36s} {dname:5s} {r['aten']:8.2f} {c:13.2f} {cl:9.2f} {pk:9.2f} {c / cl:9.2f}x {c / pk:16.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
