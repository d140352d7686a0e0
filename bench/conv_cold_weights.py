"""tessera's conv kernel and oneDNN's prepacked call with the weight in cache and read from memory.

    .venv/bin/python bench/conv_cold_weights.py [--weights 40] [--reps 120] [--threads 1]

In a network each conv's weight is read once a call, after every other layer's:
a weight over L2 comes from memory. Here each shape runs hot (one weight, launch
after launch) and cold (``--weights`` copies cycled, 40 x 4 MB past every cache
level a core can keep), medians of ``--reps`` launches, channels-last f32,
bias fused, the output a buffer kept between launches (as the program's).
ResNet-50's stage-4 convs, and a 1x1 whose weight fits L2 for contrast.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from tessera.compiler.targets.x86.conv import ConvSpec, load_conv, pack_weight, select_conv_isa

# (label, C_in, C_out, input H x W, kernel, stride)
SHAPES = [
    ("1x1 2048->512 at 7x7 (as 1x49 rows)", 2048, 512, (1, 49), 1, 1),
    ("1x1 512->2048 at 7x7 (as 1x49 rows)", 512, 2048, (1, 49), 1, 1),
    ("1x1 1024->2048 stride 2, 14x14", 1024, 2048, (14, 14), 1, 2),
    ("3x3 512->512 stride 2, 14x14", 512, 512, (14, 14), 3, 2),
    ("3x3 512->512 at 7x7", 512, 512, (7, 7), 3, 1),
    ("1x1 256->1024 at 14x14 (1 MB: fits L2)", 256, 1024, (1, 196), 1, 1),
]


def median_ms(fn, reps: int) -> float:
    for i in range(10):
        fn(i)
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=int, default=40)
    ap.add_argument("--reps", type=int, default=120)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    isa = select_conv_isa()
    print(f"torch {torch.__version__}, {a.threads} threads, {isa}; ms (GFLOP/s), {a.weights} weights cycled when cold\n")
    print("| conv | tessera hot | tessera cold | oneDNN hot | oneDNN cold |")
    print("| --- | --- | --- | --- | --- |")
    for label, cin, cout, size, k, s in SHAPES:
        print(f"| {label} | " + " | ".join(row(isa, cin, cout, size, k, s, a.weights, a.reps)) + " |", flush=True)


def row(isa: str, cin: int, cout: int, size: tuple[int, int], k: int, s: int, weights: int, reps: int) -> list[str]:
    """``ms (GFLOP/s)`` of tessera hot, cold, then oneDNN hot, cold."""
    spec = ConvSpec(1, cin, cout, size, (k, k), stride=s, padding=k // 2, bias=True, isa=isa)
    x = torch.randn(1, cin, *size).contiguous(memory_format=torch.channels_last)
    b = torch.randn(cout)
    ws = [torch.randn(cout, cin, k, k) for _ in range(weights)]
    packed = [pack_weight(w, spec).data for w in ws]
    kernel = load_conv(spec)
    out = torch.empty(spec.output_shape()).contiguous(memory_format=torch.channels_last)
    kernel.launch(x, packed[0], b, out)  # checked once, then trusted as the program does
    reordered = [torch.ops.mkldnn._reorder_convolution_weight(w, [k // 2] * 2, [s] * 2, [1, 1], 1, x.shape)
                 for w in ws]

    def tessera(i: int) -> None:
        kernel.launch_trusted([x, packed[i], b, out])

    def onednn(i: int) -> None:
        torch.ops.mkldnn._convolution_pointwise(x, reordered[i], b, [k // 2] * 2, [s] * 2, [1, 1], 1, "none", [], "")

    cells = []
    for fn in (tessera, onednn):
        for cold in (False, True):
            ms = median_ms(lambda i, fn=fn, cold=cold: fn(i % weights if cold else 0), reps)
            cells.append(f"{ms:.3f} ({spec.flops / ms / 1e6:.0f})")
    return cells

if __name__ == "__main__":
    main()
