"""Where a model's ``dynamic=True`` program loses time to its static one: both
compiled in one process, their calls interleaved round by round, each
program step timed and summed by kind (fused kernels, tessera's conv kernels,
library convs, matmuls, allocations, ...), per program (``p0`` the forward,
then the backward and any graph break's programs, in the order a call first
runs them).

    .venv/bin/python bench/dynamic_profile.py --model efficientnet_b0 --training [--batch 8] [--size 64]
    .venv/bin/python bench/dynamic_profile.py --model resnet50 --size 224 --batch 1

A zoo model (``test/py/zoo_models.py``, BatchNorm calibrated). ``--training``
times a step as ``bench/training.py`` runs it (cross entropy, backward, SGD);
otherwise inference without freezing. Separate processes cannot compare the
two on a shared host: two runs of ``bench/step_profile.py`` an hour apart once
disagreed on which program was faster (BENCHMARKS.md, session 47).
"""

from __future__ import annotations

import argparse
import collections
import copy
import random
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import training  # noqa: E402 - the zoo and a training step as bench/training.py runs it

from step_profile import _name  # noqa: E402
from tessera.runtime.program import Program  # noqa: E402

MODES = ("static", "dynamic")


def kind(step) -> str:
    """The kind of a program step a table row sums."""
    name = _name(step)
    if name.startswith("launch @fused"):
        return "fused kernels"
    if name.startswith("launch @onednn"):
        return "library convs (oneDNN)"
    if name.startswith("launch @conv"):
        return "tessera conv kernels"
    if name.startswith("launch"):
        return "other kernels"
    return name.split(" ")[0]


def calls(name: str, batch: int, size: int, is_training: bool) -> dict[str, object]:
    """A call of the model compiled static and with ``dynamic=True``, by mode."""
    base, example = training.ZOO[name].build()
    inputs = training._inputs(example, batch, size)
    out = {}
    if is_training:
        base.train()
        with torch.no_grad():
            classes = base(*inputs).shape[1]
        target = torch.randint(0, classes, (batch,))
        for mode in MODES:
            model = copy.deepcopy(base)
            out[mode] = training._step(model, torch.compile(model, backend="tessera", dynamic=mode == "dynamic"),
                                       inputs, target)
        return out
    base.eval()
    for mode in MODES:
        compiled = torch.compile(base, backend="tessera", dynamic=mode == "dynamic")

        def call(compiled=compiled) -> None:
            with torch.no_grad():
                compiled(*inputs)
        out[mode] = call
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet_b0")
    ap.add_argument("--training", action="store_true")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    runs = calls(a.model, a.batch, a.size, a.training)
    for call in runs.values():
        call()
        call()

    totals: dict[tuple[str, int, str], float] = collections.defaultdict(float)
    counts: collections.Counter = collections.Counter()
    programs: dict[tuple[str, int], int] = {}
    current = {"mode": ""}
    original = Program.run

    def run(self, *tensors, on_step=None):
        mode = current["mode"]
        p = programs.setdefault((mode, id(self)), sum(m == mode for m, _ in programs))

        def record(step, seconds: float) -> None:
            totals[(mode, p, kind(step))] += seconds
            counts[(mode, p, kind(step))] += 1
        start = time.perf_counter()
        out = original(self, *tensors, on_step=record)
        totals[(mode, p, "the program")] += time.perf_counter() - start
        counts[(mode, p, "the program")] += 1
        return out

    walls: dict[str, list[float]] = {m: [] for m in runs}
    order, rng = list(runs), random.Random(0)
    Program.run = run
    try:
        for _ in range(a.reps):
            rng.shuffle(order)
            for mode in order:
                current["mode"] = mode
                start = time.perf_counter()
                runs[mode]()
                walls[mode].append(time.perf_counter() - start)
    finally:
        Program.run = original
    what = "training step" if a.training else "inference"
    print(f"## {a.model} {what}, batch {a.batch}, {a.size}x{a.size}, {a.threads} thread(s), {a.reps} interleaved calls")
    print(" ".join(f"{m}: {statistics.median(w) * 1e3:.2f} ms a call (median);" for m, w in walls.items()))
    print("\n| program | kind | static ms (steps a call) | dynamic ms (steps a call) |\n|---|---|---:|---:|")
    for p, k in sorted({(p, k) for _, p, k in totals}, key=lambda pk: (pk[0], pk[1] != "the program", pk[1])):
        cells = [f"{totals[(m, p, k)] / a.reps * 1e3:.2f} ({counts[(m, p, k)] // a.reps})" for m in MODES]
        print(f"| p{p} | {k} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
