"""Winograd with its weight transformed on every call against the direct kernel and oneDNN, in one run.

    .venv/bin/python bench/winograd_per_call.py [--isa avx512] [--reps 15] [--threads 1]

Without freezing (training; inference as ``torch.compile`` runs it by default) a 3x3
stride-1 conv's weight is packed, or transformed and packed, on every call. Per shape
(channels x batch and plane, so 4x4 output tiles over the batch from 4 to 256), each
candidate is timed interleaved round by round (medians): tessera's direct kernel with its
weight packed per call, oneDNN's call on the plain weight (it reorders the weight inside),
and Winograd F(4x4) and F(2x2) with the transform and pack. Packs write into buffers kept
between calls (``conv/kept.py``), as the host program's do: packing into new tensors
measures page faults instead (512->512 F(4x4): 51 ms against 19, session 40). Prints
Winograd's speedup over the faster of the other two, the data behind
``conv_kernel_model.WINOGRAD_PER_CALL``, and each candidate's largest error against a
float64 conv relative to the output's scale (a candidate that computes something else is
reported, not timed as if it were the conv). Timing is never a test.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from tessera.compiler.targets.x86.conv import ConvSpec, select_conv_isa
from tessera.compiler.targets.x86.conv.api import load_conv, weight_packer
from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker

CHANNELS = [(16, 16), (32, 32), (64, 32), (64, 64), (128, 128), (256, 256), (512, 512)]
PLANES = [(1, 8), (1, 16), (8, 8), (1, 24), (1, 28), (1, 32), (8, 16), (1, 64)]
"""(batch, side): 4, 16, 32, 36, 49, 64, 128 and 256 tiles of 4x4."""


def _medians(fns: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    for f in fns.values():
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            start = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - start)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def candidates(spec: ConvSpec) -> tuple[dict[str, Callable[[], object]], dict[str, float]]:
    """The timed calls, and each one's error against float64 (:func:`_error`)."""
    torch.manual_seed(0)
    w, b = torch.randn(spec.out_channels, spec.in_channels, 3, 3), torch.randn(spec.out_channels)
    x = torch.randn(spec.input_shape()).contiguous(memory_format=torch.channels_last)
    want = F.conv2d(x.double(), w.double(), b.double(), padding=1)
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    kernel, pack = load_conv(spec), weight_packer(spec).per_call()
    kernel(x, pack(w), b, out)  # checked once, then trusted as a program's launches are
    errors = {"direct": _error(out, want)}
    fns: dict[str, Callable[[], object]] = {
        "direct": lambda: kernel.launch_trusted([x, pack(w), b, out]),
        "onednn": lambda: torch.ops.mkldnn._convolution_pointwise(x, w, b, [1, 1], [1, 1], [1, 1], 1, "none", [], ""),
    }
    errors["onednn"] = _error(fns["onednn"](), want)
    for m in (4, 2):
        conv = WinogradConv(spec, m)
        transform = WinogradPacker(conv.ws).per_call()
        conv(x, transform(w), b, out)
        errors[f"F{m}"] = _error(out, want)
        fns[f"F{m}"] = lambda c=conv, t=transform: c.launch_trusted([x, t(w), b, out])
    return fns, errors


def _error(got: object, want: torch.Tensor) -> float:
    if not isinstance(got, torch.Tensor):
        raise TypeError(f"a candidate returned {type(got).__name__}, not a tensor")
    return ((got.double() - want).abs().max() / want.abs().max()).item()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", default=None, help="the conv path (default: this host's widest)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    isa = a.isa or select_conv_isa()
    print(f"torch {torch.__version__}, {a.threads} threads, path {isa}; ms, and Winograd's speedup over the "
          "faster of the direct kernel and oneDNN")
    print("| conv | batch x plane | 4x4 tiles | direct ms | oneDNN ms | F(4x4) ms | F(2x2) ms | F(4x4) | F(2x2) | "
          "largest error (F(4x4)) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for ci, co in CHANNELS:
        for n, side in PLANES:
            if ci * co * n * side * side * 9 > 2.5e9:  # seconds a shape: the largest planes of 512 channels
                continue
            spec = ConvSpec(n, ci, co, (side, side), (3, 3), 1, 1, 1, 1, bias=True, isa=isa)
            fns, errors = candidates(spec)
            r = _medians(fns, a.reps)
            best = min(r["direct"], r["onednn"])
            tiles = n * math.ceil(side / 4) ** 2
            print(f"| {ci}->{co} | {n}x{side}x{side} | {tiles} | {r['direct']:.3f} | {r['onednn']:.3f} | "
                  f"{r['F4']:.3f} | {r['F2']:.3f} | {best / r['F4']:.2f}x | {best / r['F2']:.2f}x | "
                  f"{max(errors.values()):.1e} ({errors['F4']:.1e}) |", flush=True)


if __name__ == "__main__":
    main()
