"""The model zoo (``test/py/zoo_models.py``) through tessera: per model, what
compiled and what still runs through ATen (and why), the largest difference
from eager, and the time per call of eager, Inductor, Inductor with freezing,
OpenVINO and tessera (with and without freezing, and ``compile_exported``: the
model exported and called without Dynamo, as OpenVINO's is), medians of
interleaved rounds in one process, with the ratio of the best peer's time to
tessera's (torch.compile with freezing, and exported).

    .venv/bin/python bench/zoo.py [--models resnet18,bert_tiny] [--reps 5] [--threads 1] [--no-time] [--size 224]
                                  [--batch 8] [--device cuda] [--modes eager,tessera]

OpenVINO runs the model as its ``torch.compile`` backend cannot on torch 2.13:
``openvino.convert_model(model, example_input=...)``, then
``Core().compile_model(..., "CPU")`` with f32 inference precision (no bf16 or AMX
down-conversion) and the same thread count; its column says ``n/a`` where
``openvino`` is not installed or cannot convert the model.

``--size`` sets the height and width of an image model's input (a classifier at 224²; a
video model's frames: r3d_18 at 8x112²),
``--batch`` its batch size;
``--dtype bfloat16`` runs every mode in bfloat16 (OpenVINO: the float32 model with its
bf16 inference precision).
``--device cuda`` runs every mode on the GPU (tessera's PTX kernels; no OpenVINO column), in
full float32 (no TF32), each call timed to the GPU's end.

Prints a Markdown table for ``BENCHMARKS.md``. Record the machine with it
(``/proc/cpuinfo``): compare figures only within one run.
"""

from __future__ import annotations

import argparse
import copy
import logging
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "py"))

from zoo_models import MODELS, ZOO  # noqa: E402

from tessera.compiler.exported import compile_exported  # noqa: E402
from tessera.compiler.report import collect_reports  # noqa: E402


def _inductor_freezing(model):
    compiled = torch.compile(model)

    def run(*inputs):  # freezing is read when a graph compiles: on the first calls
        with torch._inductor.config.patch(freezing=True):
            return compiled(*inputs)

    return run


THREADS = 1


def _openvino(model, inputs):
    """The model converted and compiled by OpenVINO for this CPU (in ``DTYPE``: a
    bfloat16 run converts the float32 model and asks OpenVINO to infer in bf16), or None."""
    if DEVICE != "cpu":
        return None
    try:
        import openvino as ov
    except ImportError:
        return None
    bf16 = DTYPE == torch.bfloat16
    if bf16:  # numpy has no bfloat16: OpenVINO takes and gives float32, computing in bf16
        model = copy.deepcopy(model).float()  # Module.float() converts in place
        inputs = tuple(x.float() if x.is_floating_point() else x for x in inputs)
    try:
        converted = ov.convert_model(model, example_input=inputs if len(inputs) > 1 else inputs[0])
        compiled = ov.Core().compile_model(converted, "CPU", {"INFERENCE_PRECISION_HINT": "bf16" if bf16 else "f32",
                                                              "INFERENCE_NUM_THREADS": THREADS})
    except Exception as e:  # noqa: BLE001 - a model OpenVINO cannot take gets no column
        print(f"  OpenVINO cannot run it: {type(e).__name__}: {str(e).splitlines()[0][:120]}", file=sys.stderr)
        return None
    request = compiled.create_infer_request()

    def run(*xs):
        out = request.infer([(x.float() if bf16 and x.is_floating_point() else x).numpy() for x in xs])
        y = torch.from_numpy(out[compiled.output(0)])
        return y.to(DTYPE) if bf16 else y

    return run


MODES = {
    "eager": lambda m, xs: m,
    "Inductor": lambda m, xs: torch.compile(m),
    "Inductor freezing": lambda m, xs: _inductor_freezing(m),
    "OpenVINO": _openvino,
    "tessera": lambda m, xs: torch.compile(m, backend="tessera"),
    "tessera freezing": lambda m, xs: torch.compile(m, backend="tessera", options={"freezing": True}),
    "tessera export": lambda m, xs: compile_exported(m, xs),
}
CHECKED = ("OpenVINO", "tessera export")
"""Modes whose result is compared with eager's before they are timed (a wrong one is left out)."""
TESSERA = ("tessera freezing", "tessera export")
PEERS = ("eager", "Inductor", "Inductor freezing", "OpenVINO")


SIZE: int | None = None
"""``--size``: the spatial size of 4-D image inputs (None: the zoo's)."""
BATCH: int | None = None
"""``--batch``: the batch size of 4-D image inputs (None: the zoo's)."""
DEVICE = "cpu"
"""``--device``: where the models run."""
DTYPE = torch.float32
"""``--dtype``: the models' parameters and float inputs."""


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def build(name: str):
    """The zoo model and its inputs, an image input (or a video's frames) resized to ``SIZE``
    and batched to ``BATCH``."""
    model, inputs = ZOO[name].build()
    if (SIZE or BATCH) and inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].dim() in (4, 5):
        n, c, *frames, h, w = inputs[0].shape
        shape = (BATCH or n, c, *frames, *((SIZE, SIZE) if SIZE else (h, w)))
        inputs = (torch.randn(*shape, generator=torch.Generator().manual_seed(0)), *inputs[1:])
    return model.to(DEVICE, DTYPE), tuple(x.to(DEVICE, DTYPE) if x.is_floating_point() else x.to(DEVICE)
                                          for x in inputs)


def status(name: str) -> dict:
    """How tessera compiles ``name``: graphs, fallbacks, ops through ATen, max error."""
    model, inputs = build(name)
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        got = torch.compile(model, backend="tessera")(*inputs)
    scale = max(1.0, expected.abs().max().item())
    return {
        "graphs": len(reports),
        "fallbacks": [f"{r.status}: {r.reason}" for r in reports if not r.compiled],
        "aten": sorted({k for r in reports for k in r.aten_ops}),
        "kernels": sum(r.kernels + r.conv_kernels for r in reports),
        "error": (got.float() - expected.float()).abs().max().item() / scale,
    }


def timings(name: str, reps: int) -> dict[str, float]:
    """Median ms per call of each mode, rounds interleaved in a new random order each
    (a mode that cannot run the model is left out); OpenVINO's result is checked against eager."""
    fns = {}
    for mode, wrap in MODES.items():
        torch._dynamo.reset()
        model, inputs = build(name)
        with torch.no_grad():
            fn = wrap(model, inputs)
            if fn is None:
                continue
            out = fn(*inputs)
            fn(*inputs)
            if mode in CHECKED:
                want = model(*inputs)
                want, out = (v if isinstance(v, torch.Tensor) else v[0] for v in (want, out))
                err = (out.float() - want.float()).abs().max().item() / max(1.0, want.abs().max().item())
                if err > (1e-2 if DTYPE == torch.float32 else 1e-1):  # bf16: ~3 significant digits a rounding
                    print(f"  {mode}'s result differs from eager's ({err:.1e}): left out", file=sys.stderr)
                    continue
        fns[mode] = (fn, inputs)
    times: dict[str, list[float]] = {m: [] for m in fns}
    order = list(fns)
    rng = random.Random(0)
    with torch.no_grad():
        for _ in range(reps):
            rng.shuffle(order)
            for mode in order:
                fn, inputs = fns[mode]
                _sync()
                t0 = time.perf_counter()
                fn(*inputs)
                _sync()
                times[mode].append((time.perf_counter() - t0) * 1e3)
    return {m: statistics.median(t) for m, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(m.name for m in MODELS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-time", action="store_true", help="status and correctness only")
    ap.add_argument("--size", type=int, default=None, help="height and width of image inputs")
    ap.add_argument("--batch", type=int, default=None, help="batch size of image inputs")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                    help="the models' dtype (OpenVINO: its bf16 inference precision)")
    ap.add_argument("--modes", default=",".join(MODES), help="the columns to time (tessera's two always)")
    a = ap.parse_args()
    global SIZE, BATCH, DEVICE, DTYPE
    SIZE, BATCH, DEVICE, DTYPE = a.size, a.batch, a.device, getattr(torch, a.dtype)
    for mode in set(MODES) - set(a.modes.split(",")) - set(TESSERA):
        del MODES[mode]
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_num_threads(a.threads)
    global THREADS
    THREADS = a.threads
    logging.getLogger("tessera").setLevel(logging.ERROR)
    where = torch.cuda.get_device_name() if DEVICE == "cuda" else f"{a.threads} threads"
    print(f"torch {torch.__version__}, {where}, {a.dtype}")
    head = "| model | graphs | fallbacks | through ATen | max rel. error |"
    if not a.no_time:
        head += "".join(f" {m} ms |" for m in MODES) + "".join(f" best peer / {m} |" for m in TESSERA)
    table = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name in a.models.split(","):
        s = status(name)
        line = (f"| {name} | {s['graphs']} | {'; '.join(s['fallbacks']) or 'none'} | "
                f"{', '.join(s['aten']) or 'nothing'} | {s['error']:.1e} |")
        if not a.no_time:
            t = timings(name, a.reps)
            line += " " + " | ".join(f"{t[m]:.2f}" if m in t else "n/a" for m in MODES) + " |"
            ran = [m for m in PEERS if m in t]
            best = min(ran, key=t.__getitem__) if ran else None
            for mode in TESSERA:
                line += f" {t[best] / t[mode]:.2f}x ({best}) |" if best and mode in t else " n/a |"
        table.append(line)
        print(line, flush=True)
    print("\n".join(table))


if __name__ == "__main__":
    main()
