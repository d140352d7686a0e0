"""Training steps compiled by tessera against eager and Inductor, in one process.

    .venv/bin/python bench/training.py [--models resnet18,autoencoder_kl_decode] [--batch 8] [--size 64] [--reps 15] [--threads 1] [--dynamic]

A step is what a user's loop runs: ``zero_grad``, the compiled forward, a loss
(cross entropy for a classifier, mean squared error against a random target for
a decoder), ``backward`` through the compiled backward graph, and an SGD
``step``. Each mode trains its own copy of the model from the same weights. For
each model: the median step time of each mode (modes interleaved round by
round, in a new random order each round), the first step of each compiled mode
(compile included), and how far tessera's loss and parameter gradients after one
step are from float64's, beside eager's float32 distance (``_one_step_errors``). Prints a Markdown table for ``BENCHMARKS.md``.
Record the machine with it. ``--dynamic`` adds both compilers with ``dynamic=True``
(issue 17: a dynamic step against tessera's static one and Inductor's dynamic one).
"""

from __future__ import annotations

import argparse
import copy
import logging
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test" / "py"))

from zoo_models import ZOO  # noqa: E402

from torchvision.ops import StochasticDepth  # noqa: E402 - after zoo_models, which makes torchvision importable here

MODES = ("eager", "Inductor", "tessera")
DYNAMIC_MODES = ("Inductor dyn", "tessera dyn")


def _compiled(mode: str, model: torch.nn.Module) -> Callable:
    """``model`` as ``mode`` runs it."""
    if mode == "eager":
        return model
    backend = "tessera" if mode.startswith("tessera") else "inductor"
    return torch.compile(model, backend=backend, dynamic=True if mode.endswith(" dyn") else None)


def _inputs(example: tuple[torch.Tensor, ...], batch: int, size: int) -> tuple[torch.Tensor, ...]:
    """Inputs like a zoo model's ``example`` at ``batch``, an image (or a latent)
    resized to ``size`` (a latent: ``size // 8``, as a VAE decodes it)."""
    x = example[0]
    side = size if x.shape[1] == 3 else max(1, size // 8)
    return (torch.randn(batch, *x.shape[1:-2], side, side),)


def _loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if out.dim() == 2 and target.dim() == 1:
        return F.cross_entropy(out, target)
    return F.mse_loss(out, target)


def _step(model: torch.nn.Module, forward: Callable, inputs, target) -> Callable[[], torch.Tensor]:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = _loss(forward(*inputs), target)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def _grads_and_loss(model: torch.nn.Module, forward: Callable, inputs, target) -> list[torch.Tensor]:
    loss = _loss(forward(*inputs), target)
    loss.backward()
    return [loss.detach()] + [p.grad for p in model.parameters() if p.grad is not None]


def _error(got: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    """The largest difference, each tensor's relative to its largest magnitude, or to
    1e-3 of the largest gradient where that is smaller (a bias before a norm has a
    gradient of ~0 that rounding decides)."""
    floor = 1e-3 * max(w.abs().max().item() for w in want[1:])
    return max((g.double() - w).abs().max().item() / max(w.abs().max().item(), floor) for g, w in zip(got, want))


def _one_step_errors(model: torch.nn.Module, inputs, target) -> tuple[float, float]:
    """How far tessera's loss and parameter gradients (one step from the same weights)
    are from float64's, and how far eager's float32 ones are: random-weight networks
    in training mode are ill-conditioned, and eager's own error is the yardstick."""
    ours, eager, exact = copy.deepcopy(model), copy.deepcopy(model), copy.deepcopy(model).double()
    want = _grads_and_loss(exact, exact, [x.double() for x in inputs],
                           target if not target.is_floating_point() else target.double())
    got = _grads_and_loss(ours, torch.compile(ours, backend="tessera"), inputs, target)
    ref = _grads_and_loss(eager, eager, inputs, target)
    torch._dynamo.reset()
    return _error(got, want), _error(ref, want)


def bench(name: str, batch: int, size: int, reps: int, dynamic: bool = False) -> str:
    base, example = ZOO[name].build()
    base.train()
    for m in base.modules():
        if isinstance(m, (torch.nn.Dropout, StochasticDepth)):
            m.p = 0.0  # the same mask in every mode
    inputs = _inputs(example, batch, size)
    with torch.no_grad():
        out = base(*inputs)
    target = (torch.randint(0, out.shape[1], (batch,)) if out.dim() == 2 else torch.randn_like(out))
    error, eager_error = _one_step_errors(base, inputs, target)
    steps, first = {}, {}
    modes = MODES + (DYNAMIC_MODES if dynamic else ())
    for mode in modes:
        model = copy.deepcopy(base)
        steps[mode] = _step(model, _compiled(mode, model), inputs, target)
        t0 = time.perf_counter()
        try:
            steps[mode]()
        except Exception as e:  # noqa: BLE001 - a peer that fails on this model (Inductor's dynamic shapes)
            if mode == "Inductor dyn":
                print(f"{name}: {mode} fails: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
                del steps[mode]
                continue
            raise
        first[mode] = time.perf_counter() - t0
        steps[mode]()
    modes = tuple(steps)
    times: dict[str, list[float]] = {m: [] for m in modes}
    order, rng = list(modes), random.Random(0)
    for _ in range(reps):
        rng.shuffle(order)
        for mode in order:
            t0 = time.perf_counter()
            steps[mode]()
            times[mode].append((time.perf_counter() - t0) * 1e3)
    med = {m: statistics.median(t) for m, t in times.items()}
    med.setdefault("Inductor dyn", float("nan"))
    shape = "x".join(map(str, inputs[0].shape))
    row = (f"| {name} | {shape} | {med['eager']:.2f} | {med['Inductor']:.2f} | {med['tessera']:.2f} | "
           f"{med['eager'] / med['tessera']:.2f}x | {med['Inductor'] / med['tessera']:.2f}x | "
           f"{first['tessera']:.1f} / {first['Inductor']:.1f} | {error:.1e} / {eager_error:.1e} |")
    if dynamic:
        dyn, ind = med["tessera dyn"], med["Inductor dyn"]
        row += (f" {ind:.2f} | {dyn:.2f} | {dyn / med['tessera']:.2f} | {med['eager'] / dyn:.2f}x | "
                f"{ind / dyn:.2f}x |")
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,autoencoder_kl_decode")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=64, help="image side (a VAE's latent: size / 8)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true", help="also both compilers with dynamic=True")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    logging.getLogger("tessera").setLevel(logging.ERROR)
    print(f"torch {torch.__version__}, {a.threads} threads, batch {a.batch}, size {a.size}")
    head = ("| model | input | eager ms | Inductor ms | tessera ms | eager / tessera | Inductor / tessera "
            "| first step s (tessera / Inductor) | error vs float64 (tessera / eager) |")
    if a.dynamic:
        head += (" Inductor dyn ms | tessera dyn ms | tessera dyn / static | eager / tessera dyn "
                 "| Inductor dyn / tessera dyn |")
    table = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name in a.models.split(","):
        table.append(bench(name, a.batch, a.size, a.reps, a.dynamic))
        print(table[-1], flush=True)
    print("\n".join(table))


if __name__ == "__main__":
    main()
