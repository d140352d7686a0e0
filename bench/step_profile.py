"""Where a compiled model's time goes: each step of tessera's program (kernel
launches, library calls, allocations), summed over repeated calls, and what
the call costs outside the program (Dynamo's guards, AOTAutograd's wrappers).

    .venv/bin/python bench/step_profile.py [--model resnet_block] [--reps 20] [--threads 2] [--dynamic]
    .venv/bin/python bench/step_profile.py --model zoo:regnet_y_400mf --size 224 [--top 30] [--dtype bfloat16]
    .venv/bin/python bench/step_profile.py --model zoo:resnet18 --batch 8 --training
    .venv/bin/python bench/step_profile.py --model zoo:autoencoder_kl_decode --size 32 --no-freezing
    .venv/bin/python bench/step_profile.py --model zoo:mobilenet_v2 --size 224 --cold    # caches swept first

Uses each example's ``benchmark()`` size, or a model of the zoo
(``test/py/zoo_models.py``, BatchNorm calibrated) at its inputs, an image's (or a
video's) height and width set to ``--size`` (and batched to ``--batch``); ``--dynamic`` compiles with
``dynamic=True`` (one program for every size: compare with the static one);
``--dtype bfloat16`` runs the model in bf16; inference is compiled with freezing unless
``--no-freezing`` (``torch.compile``'s default: weights packed on every call); ``--training`` profiles a training
step (train mode, no freezing: the forward, ``square().mean()`` of its output,
and the backward), each step's name prefixed with its program in the order the
step first runs them (``p0``, ``p1``, ...: the forward and the backward of a model
Dynamo captures whole; graph breaks add programs). Steps are timed as the
steady state runs them (the straight-line function, ``runtime/runner.py``, but
each launch on its own where the untimed one calls runs of them natively),
host wall-clock (CPU targets: the steps are synchronous); ``--top`` lists the
slowest steps only.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

import torch

from tessera.compiler.model_loader import load_example
from tessera.runtime.kernel import Kernel
from tessera.runtime.program import Alloc, Launch, Program, SizedAlloc

ROOT = Path(__file__).resolve().parent.parent


def _name(step) -> str:
    if isinstance(step, (Alloc, SizedAlloc)):
        return "alloc"
    if isinstance(step, Launch):
        k = step.kernel  # a Kernel, or several behind one step (runtime.kernel.Launchable)
        return f"launch @{k.name}" + (f" grid={list(k.signature.grid)}" if isinstance(k, Kernel) else "")
    name = getattr(step.fn, "__name__", None) or f"call {type(step.fn).__name__}"
    callee = getattr(getattr(step.fn, "fn", None), "callee", None)  # a tsr.aten_call's ATen op
    return f"{name} {callee}" if callee else name


def _model(name: str, size: int | None, batch: int | None = None,
           dtype: torch.dtype = torch.float32) -> tuple[torch.nn.Module, tuple]:
    if not name.startswith("zoo:"):
        model, args = load_example(str(ROOT / "examples" / f"{name}.py"), "benchmark")
    else:
        sys.path.insert(0, str(ROOT / "test" / "py"))
        from zoo_models import ZOO

        model, args = ZOO[name.removeprefix("zoo:")].build()
    if args and isinstance(args[0], torch.Tensor) and args[0].dim() >= 4 and (size or batch):
        x = args[0]
        shape = (batch or x.shape[0], *x.shape[1:-2], *((size, size) if size else x.shape[-2:]))
        args = (torch.randn(*shape, generator=torch.Generator().manual_seed(0)), *args[1:])
    return model.to(dtype), tuple(a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                                  for a in args)


COLD_BYTES = 512 << 20
"""``--cold``: bytes written between calls, past every cache a core reaches (this Xeon's L3: 260 MB)."""


def profile(name: str, reps: int, dynamic: bool = False, size: int | None = None, top: int | None = None,
            batch: int | None = None, dtype: torch.dtype = torch.float32, training: bool = False,
            freezing: bool = True, cold: bool = False, disable: tuple[str, ...] = ()) -> None:
    model, args = _model(name, size, batch, dtype)
    totals: dict[tuple[int, int], float] = collections.defaultdict(float)
    names: dict[tuple[int, int], str] = {}
    programs: list[int] = []  # in the order a step first runs them: p0 forward, p1 backward without graph breaks
    original = Program.run
    recording = {"on": False}

    def run(self, *tensors, on_step=None):
        if not recording["on"]:
            return original(self, *tensors)
        index = iter(range(len(self.steps)))
        if id(self) not in programs:
            programs.append(id(self))
        prefix = f"p{programs.index(id(self))} " if training else ""

        def record(step, seconds):
            key = (id(self), next(index))
            names[key] = prefix + _name(step)
            totals[key] += seconds

        return original(self, *tensors, on_step=record)

    Program.run = run
    if training:
        model.train()
        compiled = torch.compile(model, backend="tessera", options={"disable": disable}, dynamic=dynamic)

        def call() -> None:
            model.zero_grad(set_to_none=True)
            out = compiled(*args)
            (out if isinstance(out, torch.Tensor) else out[0]).float().square().mean().backward()
    else:
        compiled = torch.compile(model, backend="tessera", options={"freezing": freezing, "disable": disable},
                                 dynamic=dynamic)

        def call() -> None:
            with torch.no_grad():
                compiled(*args)
    try:
        for _ in range(3):
            call()
        walls = []
        recording["on"] = True
        sweep = torch.zeros(COLD_BYTES // 4) if cold else None
        for _ in range(reps):
            if sweep is not None:  # what an interleaved benchmark's other models do to the caches
                sweep.add_(1.0)
            start = time.perf_counter()
            call()
            walls.append(time.perf_counter() - start)
    finally:
        Program.run = original
    inside = sum(totals.values()) / reps
    wall = statistics.mean(walls)
    mode = " (dynamic=True)" if dynamic else ""
    if training:
        mode += " (training step)"
    elif not freezing:
        mode += " (no freezing)"
    mode += f" ({dtype})" if dtype != torch.float32 else ""
    mode += " (caches swept before each call)" if cold else ""
    print(f"## {name}{mode}: {wall * 1e3:.2f} ms per call (mean of {reps}); program steps {inside * 1e3:.2f} ms; "
          f"outside the program {(wall - inside) * 1e3:.2f} ms")
    by_kind: dict[str, float] = collections.defaultdict(float)
    kind_of = (lambda n: " ".join(n.split(" ")[:2])) if training else (lambda n: n.split(" ")[0])
    print("| step | ms | % |\n|---|---:|---:|")
    ranked = sorted(totals.items(), key=lambda kv: -kv[1]) if top else list(totals.items())
    for rank, (key, total) in enumerate(ranked):
        ms = total / reps * 1e3
        by_kind[kind_of(names[key])] += ms
        if top is None or rank < top:
            print(f"| {names[key]} | {ms:.3f} | {100 * ms / (wall * 1e3):.1f} |")
    print("\n| kind | ms | % |\n|---|---:|---:|")
    for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {ms:.3f} | {100 * ms / (wall * 1e3):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet_block")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True")
    ap.add_argument("--size", type=int, default=None, help="height and width of a zoo model's image input")
    ap.add_argument("--top", type=int, default=None, help="list only the slowest steps")
    ap.add_argument("--batch", type=int, default=None, help="batch size of the input (default: the model's)")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    ap.add_argument("--training", action="store_true", help="profile a training step (forward and backward)")
    ap.add_argument("--no-freezing", action="store_true", help="inference without freezing (weights packed per call)")
    ap.add_argument("--cold", action="store_true", help="sweep the caches before each call (as interleaved runs do)")
    ap.add_argument("--disable", default="", help="graph passes to leave out, comma-separated (to measure one)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    profile(a.model, a.reps, a.dynamic, a.size, a.top, a.batch, getattr(torch, a.dtype), a.training,
            not a.no_freezing, a.cold, tuple(p for p in a.disable.split(",") if p))


if __name__ == "__main__":
    main()
