"""The example models at realistic sizes (each example's ``benchmark()``), inference,
in six modes timed in one process: eager, eager channels-last, Inductor
(``torch.compile`` default), Inductor with ``freezing=True``, tessera (default:
weights read every call, as Inductor's default) and tessera with ``freezing``
(prepared weights kept per version, as Inductor's freezing).

    .venv/bin/python bench/models.py [--models video_vae_block,vae2d_block] [--reps 10] [--threads 2]
        [--modes "Inductor freezing,tessera freezing"] [--without fuse-conv-residuals] [--device cuda]

For each model: first-call time (compile included), steady-state median after
warm-up (modes interleaved round by round, in a new random order each round), the largest difference from eager,
and the ratios against Inductor. Prints a Markdown table for ``BENCHMARKS.md``.
``--device cuda`` runs every mode on the GPU in full float32 (no TF32), each call
timed to the GPU's end.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch

from tessera.compiler.model_loader import load_example

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("video_vae_block", "vae2d_block", "resnet_block", "mobilenet_block", "mlp")
DEVICE = "cpu"
"""``--device``: where the models run."""


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _channels_last(model, args):
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}
    xs = tuple(a.contiguous(memory_format=fmt[a.dim()]) if a.dim() in fmt else a for a in args)
    try:
        m = model.to(memory_format=fmt[args[0].dim()]) if args[0].dim() in fmt else model
    except Exception:  # noqa: BLE001  (a model without convs)
        m = model
    return m, xs


def modes(name: str, without: tuple[str, ...] = ()):
    """(mode name, make() -> (fn, args)) for each mode; make() may compile lazily.
    ``without``: passes to measure, each adding a tessera mode with it disabled."""
    def eager():
        model, args = load_example(str(ROOT / "examples" / f"{name}.py"), "benchmark")
        return model.to(DEVICE), tuple(a.to(DEVICE) for a in args)

    def eager_cl():
        model, args = eager()
        return _channels_last(model, args)

    def inductor():
        model, args = eager()
        return torch.compile(model), args

    def inductor_frozen():
        import torch._inductor.config as cfg

        model, args = eager()
        compiled = torch.compile(model)

        def run(*a):
            # Freezing is read when Dynamo compiles, which can happen on any call (the
            # other modes' torch._dynamo.reset()); set for the call only. Plain
            # attribute stores: cfg.patch() per call cost ~0.25 ms and flattered tessera.
            cfg.freezing = True
            try:
                return compiled(*a)
            finally:
                cfg.freezing = False
        return run, args

    def tessera(disable=(), conv_kernels=True, freezing=True):
        model, args = eager()
        options = {"disable": disable, "conv_kernels": conv_kernels, "freezing": freezing}
        return torch.compile(model, backend="tessera", options=options), args

    out = [("eager", eager), ("eager CL", eager_cl), ("Inductor", inductor),
           ("Inductor freezing", inductor_frozen), ("tessera", lambda: tessera(freezing=False)),
           ("tessera freezing", tessera)]
    for p in without:  # each against "tessera freezing"
        if p == "conv-kernels":  # not a pass: every conv on oneDNN
            out.append(("tessera freezing -conv-kernels", lambda: tessera(conv_kernels=False)))
        else:
            out.append((f"tessera freezing -{p}", lambda p=p: tessera((p,))))
    return out


def bench_model(name: str, reps: int, only: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> list[dict]:
    rows, fns = [], []
    ref = None
    with torch.no_grad():
        for mode, make in modes(name, without):
            if only and mode not in only and mode != "eager":  # eager stays: the reference
                continue
            torch._dynamo.reset()  # each compiled mode compiles afresh, not from another mode's cache
            fn, args = make()
            t0 = time.perf_counter()
            out = _first(fn(*args)).float()
            _sync()
            first = time.perf_counter() - t0
            if ref is None:
                ref = out
            err = (out - ref).abs().max().item()
            fns.append((mode, fn, args))
            rows.append({"mode": mode, "first_s": first, "err": err, "ms": []})
        for fn_ in fns:  # warm-up
            fn_[1](*fn_[2])
        order = random.Random(0)
        pairs = list(zip(rows, fns))
        for _ in range(reps):
            order.shuffle(pairs)  # a new order each round: no mode always runs after the same one
            for row, (mode, fn, args) in pairs:
                _sync()
                t0 = time.perf_counter()
                fn(*args)
                _sync()
                row["ms"].append((time.perf_counter() - t0) * 1e3)
    for row in rows:
        row["median_ms"] = statistics.median(row["ms"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--modes", default="", help="comma-separated modes to time (default: all; eager always runs)")
    ap.add_argument("--without", default="",
                    help="comma-separated passes (or conv-kernels: every conv on oneDNN): a tessera mode with each disabled")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    only = tuple(m for m in a.modes.split(",") if m)
    without = tuple(p for p in a.without.split(",") if p)
    torch.set_num_threads(a.threads)
    where = torch.cuda.get_device_name() if DEVICE == "cuda" else f"{a.threads} threads"
    print(f"torch {torch.__version__}, {where}")
    table = ["| model | mode | first call (s) | median (ms) | vs Inductor | vs Inductor freezing | max abs diff vs eager |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in a.models.split(","):
        rows = bench_model(name, a.reps, only, without)
        by = {r["mode"]: r["median_ms"] for r in rows}
        for r in rows:
            ratio = lambda mode: f"{by[mode] / r['median_ms']:.2f}x" if mode in by else "-"  # noqa: E731
            line = (f"| {name} | {r['mode']} | {r['first_s']:.1f} | {r['median_ms']:.2f} | "
                    f"{ratio('Inductor')} | {ratio('Inductor freezing')} | {r['err']:.1e} |")
            table.append(line)
            print(line, flush=True)
    print("\n".join(table))


if __name__ == "__main__":
    main()
