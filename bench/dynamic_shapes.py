"""One model compiled with ``dynamic=True`` against the same model compiled static
per size, for tessera and Inductor, at several sizes, in one process.

    .venv/bin/python bench/dynamic_shapes.py [--models vae2d_block,resnet50] [--reps 7] [--threads 1] [--freezing]

For each model and size: the steady-state median per call (modes interleaved
round by round, in a new random order each round) of eager, tessera dynamic (one
``torch.compile(dynamic=True)`` serving every size: kernels that take their sizes
at run time; convolutions on the library, or under ``--freezing`` on tessera's
kernel per size where its cost model says), tessera static (a ``torch.compile``
per size), Inductor dynamic and Inductor static (each with freezing under
``--freezing``); the first
call of each compiled mode at that size (compile included: for a dynamic mode,
its work for a size it has not seen); the largest difference from eager; and
how many graphs tessera dynamic compiled after its first size (0: one program
served them all). A static mode that compiles no graph of its own at a size is
an error: Dynamo keeps compiled code per code object, and guards that accept
the size would have it time another mode's program.
Prints a Markdown table for ``BENCHMARKS.md``. Record the machine with it.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test" / "py"))

from tessera.compiler.model_loader import load_example  # noqa: E402


def _example(name: str, channels: int, frames: int | None):
    def build():
        model, _ = load_example(str(ROOT / "examples" / f"{name}.py"), "benchmark")
        return model

    def shape(size: int, b: int) -> tuple[int, ...]:
        return (b, channels, frames, size, size) if frames else (b, channels, size, size)

    return build, shape


def _zoo(name: str, channels: int, frames: int | None):
    from zoo_models import ZOO

    def build():
        return ZOO[name].build()[0]

    def shape(size: int, b: int) -> tuple[int, ...]:
        return (b, channels, frames, size, size) if frames else (b, channels, size, size)

    return build, shape


MODELS: dict[str, tuple[Callable, Callable, tuple[int, ...]]] = {
    # name -> (build, shape(size, batch), spatial sizes); a last row at batch 2 uses the second size
    "video_vae_block": (*_example("video_vae_block", 64, 4), (16, 24, 32, 48)),
    "vae2d_block": (*_example("vae2d_block", 128, None), (16, 24, 32, 48)),
    "resnet50": (*_zoo("resnet50", 3, None), (64, 96, 128, 160)),
    "autoencoder_kl_wan_decode": (*_zoo("autoencoder_kl_wan_decode", 4, 2), (8, 12, 16, 24)),
}

MODES = ("eager", "tessera dynamic", "tessera static", "Inductor dynamic", "Inductor static")


def _graphs() -> int:
    """Graphs Dynamo has compiled in this process (its ``unique_graphs`` counter)."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def _timed(fn, x) -> float:
    t0 = time.perf_counter()
    fn(x)
    return (time.perf_counter() - t0) * 1e3


def bench(name: str, reps: int, freezing: bool = False) -> list[str]:
    build, shape, sizes = MODELS[name]
    eager = build()
    opts = {"options": {"freezing": True}} if freezing else {}  # tessera's option and Inductor's config alike
    dynamic = {"tessera dynamic": torch.compile(build(), backend="tessera", dynamic=True, **opts),
               "Inductor dynamic": torch.compile(build(), dynamic=True, **opts)}
    rows = []
    cases = [shape(s, 1) for s in sizes] + [shape(sizes[1], 2)]
    recompiles = 0  # graphs tessera dynamic compiled after its first size: 0 when one program serves every size
    with torch.no_grad():
        for x_shape in cases:
            x = torch.randn(x_shape)
            want = eager(x)
            fns = {"eager": eager, **dynamic,
                   "tessera static": torch.compile(build(), backend="tessera", dynamic=False, **opts),
                   "Inductor static": torch.compile(build(), dynamic=False, **opts)}
            first, error = {}, {}
            for mode in MODES[1:]:
                before = _graphs()
                first[mode] = _timed(fns[mode], x)
                compiled = _graphs() - before
                if "static" in mode and not compiled:  # Dynamo ran another mode's code: this row would time it twice
                    raise RuntimeError(f"{mode} compiled no graph of its own at {x_shape}")
                if mode == "tessera dynamic":
                    recompiles += compiled if x_shape != cases[0] else 0
                error[mode] = (fns[mode](x) - want).abs().max().item() / max(1.0, want.abs().max().item())
            times: dict[str, list[float]] = {m: [] for m in MODES}
            order = list(MODES)
            rng = random.Random(0)
            for _ in range(reps):
                rng.shuffle(order)
                for mode in order:
                    times[mode].append(_timed(fns[mode], x))
            med = {m: statistics.median(t) for m, t in times.items()}
            td, ts, idyn, ist = (med[m] for m in MODES[1:])
            rows.append(
                f"| {name} | {'x'.join(map(str, x_shape))} | {med['eager']:.2f} | {td:.2f} | {ts:.2f} | {idyn:.2f} | "
                f"{ist:.2f} | {td / ts:.2f} | {idyn / td:.2f}x | {ist / ts:.2f}x | "
                f"{first['tessera dynamic'] / 1e3:.2f} / {first['Inductor dynamic'] / 1e3:.2f} | "
                f"{max(error.values()):.1e} | {recompiles} |")
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--freezing", action="store_true", help="compile every mode with freezing (weights packed once)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    logging.getLogger("tessera").setLevel(logging.ERROR)
    torch._dynamo.config.cache_size_limit = 64  # the static modes compile once per size
    print(f"torch {torch.__version__}, {a.threads} threads{', freezing' if a.freezing else ''}")
    head = ("| model | input | eager ms | tessera dyn ms | tessera static ms | Inductor dyn ms | Inductor static ms "
            "| tessera dyn / static | Inductor dyn / tessera dyn | Inductor static / tessera static "
            "| first call s (tessera dyn / Inductor dyn) | max rel. error | tessera dyn recompiles |")
    table = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name in a.models.split(","):
        table += bench(name, a.reps, a.freezing)
    print("\n".join(table))


if __name__ == "__main__":
    main()
