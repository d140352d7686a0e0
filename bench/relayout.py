"""The transposing kernels of a channels-last conv's neighbourhood, at the
ResNet block's size (1x64x56x56 f32): NCHW -> NHWC (in front of the first
conv), NHWC -> NCHW (after the last one), ``relu(y_nhwc + x_nchw)`` written
NCHW (the block's shortcut) and ``sigmoid(y_nhwc * x_nchw)`` written NCHW (a
larger body, as a squeeze-excite gate's), each as tessera compiles it with the x86
transpose tiles (``lowering/transpose_tiles.py``) and without them (strided
reads, which LLVM turns into gathers), against ATen's copy between the two
layouts and a plain same-layout copy of as many bytes (the bandwidth
reference). Medians of the kernel launches alone, on warm caches and after
evicting them (a 256 MB read before each launch), the best of three rounds
that interleave the four.

    .venv/bin/python bench/relayout.py [--threads 2] [--reps 100]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from tessera.compiler.context import make_context
from tessera.compiler.ir_io import parse_module
from tessera.compiler.lowering import lower_to_kernels
from tessera.compiler.pass_pipeline import build_pipeline
from tessera.compiler import targets
from tessera.compiler.build import compile_kernels

SHAPE = (1, 64, 56, 56)


def _t(layout: str) -> str:
    return f"tensor<{'x'.join(map(str, SHAPE))}xf32, #tsr.layout<{layout}>>"


CASES = {  # name: (argument layouts, result layout, body)
    "nchw -> nhwc": (["nchw"], "nhwc", f"%r = tsr.relayout %a0 : ({_t('nchw')}) -> {_t('nhwc')}"),
    "nhwc -> nchw": (["nhwc"], "nchw", f"%r = tsr.relayout %a0 : ({_t('nhwc')}) -> {_t('nchw')}"),
    "relu(y_nhwc + x_nchw) -> nchw": (
        ["nhwc", "nchw"], "nchw",
        f"%s = tsr.add %a0, %a1 : ({_t('nhwc')}, {_t('nchw')}) -> {_t('nchw')}\n"
        f"  %r = tsr.relu %s : ({_t('nchw')}) -> {_t('nchw')}"),
    "sigmoid(y_nhwc * x_nchw) -> nchw": (  # a larger body: a squeeze-excite gate's
        ["nhwc", "nchw"], "nchw",
        f"%s = tsr.mul %a0, %a1 : ({_t('nhwc')}, {_t('nchw')}) -> {_t('nchw')}\n"
        f"  %r = tsr.sigmoid %s : ({_t('nchw')}) -> {_t('nchw')}"),
}
FORMATS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def kernel(layouts: list[str], result: str, body: str, tile: int | None):
    args = ", ".join(f"%a{i}: {_t(lay)}" for i, lay in enumerate(layouts))
    module = parse_module(f"func.func @forward({args}) -> {_t(result)} {{\n  {body}\n  func.return %r : {_t(result)}\n}}")
    build_pipeline(targets.get("x86").fusion_pipeline()).apply(make_context(), module)
    program = lower_to_kernels(module, transpose_tile=tile)
    (fn,) = list(program.kernels.body.block.ops)
    return compile_kernels(program.kernels, cache=None).kernel(fn.sym_name.data)


def median_us(fn, reps: int, evict: torch.Tensor | None) -> float:
    times = []
    for _ in range(reps):
        if evict is not None:
            evict.sum()  # read: the lines it pushes out are clean
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=100)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    evict = torch.zeros(64 << 20)  # 256 MB, more than the last-level cache
    print(f"torch {torch.__version__}, {a.threads} threads, {SHAPE} f32; microseconds, median of {a.reps}")
    print("| kernel | caches | tessera tiles | tessera strided | ATen copy | same-layout copy |\n|---|---|---:|---:|---:|---:|")
    for name, (layouts, result, body) in CASES.items():
        ins = [torch.randn(SHAPE).contiguous(memory_format=FORMATS[lay]) for lay in layouts]
        out = torch.empty(SHAPE).contiguous(memory_format=FORMATS[result])
        same = torch.empty_like(ins[0])
        tiled, strided = kernel(layouts, result, body, 8), kernel(layouts, result, body, None)
        runs = {
            "tiles": lambda: tiled(*ins, out),
            "strided": lambda: strided(*ins, out),
            "aten": lambda: out.copy_(ins[0]),
            "same": lambda: same.copy_(ins[0]),
        }
        for f in runs.values():
            f()
        for caches, ev in (("warm", None), ("evicted", evict)):
            rounds = [{k: median_us(f, a.reps, ev) for k, f in runs.items()} for _ in range(3)]  # interleaved
            best = {k: min(r[k] for r in rounds) for k in runs}
            print(f"| {name} | {caches} | {best['tiles']:.0f} | {best['strided']:.0f} | {best['aten']:.0f} | "
                  f"{best['same']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
