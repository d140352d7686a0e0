"""What folding a relayout into tessera's conv kernel buys, end to end: the data
behind the contiguous-input and contiguous-output rules of
``compiler/targets/x86/conv_kernel_model.py``.

    .venv/bin/python bench/conv_layout_folds.py [--threads 2] [--reps 30] [--only input]

Each case is a one-conv model compiled with tessera twice and timed interleaved
in one process (medians of the whole call, random order each round):

* ``folded``: ``fold-relayouts-into-convs`` and ``fuse-conv-residuals`` with the
  contiguous-layout rules forced to fold, so tessera's kernel reads NCHW input or
  writes NCHW output whatever the shape;
* ``relayouts``: the same with both passes disabled, so the relayouts (and a
  shortcut add) are kernels of their own beside the conv (tessera's or oneDNN's,
  as the channels-last rule decides).

``relayouts / folded`` is the speedup a contiguous-layout rule records; the last
column says whether the rules, unforced, fold that case.

Cases: ``input`` reads an NCHW input and returns channels-last (only the input
relayout is at stake); ``output`` reads channels-last and returns NCHW;
``residual`` returns ``relu(conv(x) + r)`` in NCHW with ``r`` NCHW (a ResNet
shortcut). The script prints which conv kernels the folded program launches, so
a case the rules keep unfolded shows up as such (ratio ~1).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import types

import torch
from torch import nn

from tessera.compiler.targets.x86.conv_kernel_model import CONTIGUOUS_INPUT_RULES, CONTIGUOUS_OUTPUT_RULES
from tessera.passes.target_models import Rule
from tessera.runtime.kernel import Kernel

TABLES = (CONTIGUOUS_INPUT_RULES, CONTIGUOUS_OUTPUT_RULES)
FORCED = (Rule("forced", lambda c: True, 9.9),)

# (case, in channels, out channels, spatial size, kernel)
CASES = [
    ("input", 64, 64, (56, 56), 3), ("input", 32, 32, (112, 112), 3), ("input", 64, 64, (28, 28), 3),
    ("input", 16, 32, (56, 56), 3), ("input", 64, 128, (56, 56), 1), ("input", 48, 48, (4, 32, 32), 3),
    ("input", 128, 128, (64, 64), 3), ("input", 256, 64, (56, 56), 1),
    ("input", 3, 64, (224, 224), 3), ("input", 3, 32, (112, 112), 3),  # an image's first conv (C_in < 16)
    ("output", 64, 64, (56, 56), 3), ("output", 32, 32, (112, 112), 3), ("output", 128, 128, (28, 28), 3),
    ("output", 256, 256, (14, 14), 3), ("output", 144, 24, (56, 56), 1), ("output", 64, 64, (4, 32, 32), 3),
    ("residual", 64, 64, (56, 56), 3), ("residual", 144, 24, (56, 56), 1),
]
PASSES = ("fold-relayouts-into-convs", "fuse-conv-residuals")


class OneConv(nn.Module):
    def __init__(self, case: str, cin: int, cout: int, dims: int, k: int):
        super().__init__()
        self.case = case
        self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(cin, cout, k, padding=k // 2)
        self.cl = torch.channels_last if dims == 2 else torch.channels_last_3d

    def forward(self, x, r=None):
        y = self.conv(x)
        if self.case == "input":
            return y.contiguous(memory_format=self.cl)
        if self.case == "output":
            return y.contiguous()
        return torch.relu(y + r).contiguous()


def _own_code(model: nn.Module, tag: str):
    """``model.forward`` as a bound method with a code object of its own: Dynamo keeps
    its compiled code per code object, so each mode compiles and keeps its own."""
    fwd = type(model).forward
    code = fwd.__code__.replace(co_name=f"forward_{tag}")
    return types.MethodType(types.FunctionType(code, fwd.__globals__, code.co_name, fwd.__defaults__), model)


def _with_rules(forced: bool, fn, args):
    """``fn(*args)`` with the contiguous-layout rules forced to fold (or as they are)."""
    if not forced:
        return fn(*args)
    saved = [t["x86"] for t in TABLES]
    for t in TABLES:
        t["x86"] = FORCED
    try:
        return fn(*args)
    finally:
        for t, old in zip(TABLES, saved):
            t["x86"] = old


def launched_convs(call) -> list[str]:
    names: list[str] = []
    launch, trusted = Kernel.launch, Kernel.launch_trusted
    Kernel.launch = lambda self, *t, **kw: (names.append(self.name), launch(self, *t, **kw))[1]
    Kernel.launch_trusted = lambda self, t: (names.append(self.name), trusted(self, t))[1]
    try:
        call()
    finally:
        Kernel.launch, Kernel.launch_trusted = launch, trusted
    return [n for n in names if n.startswith("conv")]


def bench_case(case: str, cin: int, cout: int, size: tuple[int, ...], k: int, reps: int) -> dict:
    torch.manual_seed(0)
    model = OneConv(case, cin, cout, len(size), k).eval()
    x = torch.randn(1, cin, *size)
    if case != "input":
        x = x.contiguous(memory_format=model.cl)
    args = (x,) if case != "residual" else (x, torch.randn(1, cout, *size))
    modes = {"rules": ((), False), "folded": ((), True), "relayouts": (PASSES, False)}
    fns = {m: torch.compile(_own_code(model, m), backend="tessera", options={"disable": disable, "freezing": True}, dynamic=False)
           for m, (disable, _) in modes.items()}
    # Every call runs under its mode's rule tables: Dynamo may compile (again) on any call.
    call = {m: (lambda m=m: _with_rules(modes[m][1], fns[m], args)) for m in modes}
    with torch.no_grad():
        want = model(*args)
        for m in modes:
            torch.testing.assert_close(call[m](), want, rtol=1e-4, atol=1e-4)
        folds = any("contig" in n for n in launched_convs(call["rules"]))
        convs = launched_convs(call["folded"])
        if any("contig" in n for n in launched_convs(call["relayouts"])):
            raise RuntimeError("the relayouts mode runs a folded conv: its compiled code was not its own")
        del call["rules"]
        times: dict[str, list[float]] = {m: [] for m in call}
        order = list(call)
        for _ in range(reps):
            random.shuffle(order)
            for m in order:
                t0 = time.perf_counter()
                call[m]()
                times[m].append(time.perf_counter() - t0)
    med = {m: statistics.median(v) * 1e3 for m, v in times.items()}
    return {"case": case, "conv": f"{k}x{k}{'x' + str(k) if len(size) == 3 else ''} {cin}->{cout} {'x'.join(map(str, size))}",
            "folded_ms": med["folded"], "relayouts_ms": med["relayouts"], "kernels": convs, "rules_fold": folds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--only", default=None, help="input, output or residual")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    random.seed(0)
    print(f"torch {torch.__version__}, {a.threads} threads")
    print("| case | conv | folded (ms) | relayout kernels (ms) | speedup | the rules fold | folded conv kernel |")
    print("|---|---|---:|---:|---:|---|---|")
    for case, cin, cout, size, k in CASES:
        if a.only and case != a.only:
            continue
        r = bench_case(case, cin, cout, size, k, a.reps)
        kernels = ", ".join(n.split("_", 2)[-1] for n in r["kernels"]) or "oneDNN"
        print(f"| {r['case']} | {r['conv']} | {r['folded_ms']:.3f} | {r['relayouts_ms']:.3f} | "
              f"{r['relayouts_ms'] / r['folded_ms']:.2f}x | {'yes' if r['rules_fold'] else 'no'} | {kernels} |", flush=True)


if __name__ == "__main__":
    main()
