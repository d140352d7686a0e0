"""What a CPU kernel launch costs: the ResNet block's pointwise kernels (its
``benchmark()`` size) run on 1 thread, and on 2 split by a Python thread pool
(``runtime.cpu.run_chunks``) against OpenMP's threads (``runtime.openmp``, what
the runtime uses), interleaved in one process; medians of 200 launches,
signature checks excluded.

    .venv/bin/python bench/launch_overhead.py [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tessera.compiler.backend import BackendOptions, compile_kernels_of
from tessera.compiler.capture import capture
from tessera.compiler.context import make_context
from tessera.compiler.fx_import import import_graph
from tessera.compiler.model_loader import load_example
from tessera.compiler.pass_pipeline import build_pipeline
from tessera.compiler import targets
from tessera.runtime import cpu, openmp
from tessera.runtime.program import Launch

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(fn, reps: int = 200) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model, args = load_example(str(ROOT / "examples" / "resnet_block.py"), "benchmark")
    module = import_graph(capture(model, args).forward[0]).module
    build_pipeline(targets.get("x86").graph_pipeline()).apply(make_context(), module)
    host = compile_kernels_of(module, BackendOptions().compile_options(torch.device("cpu")))
    print(f"torch {torch.__version__}, {a.threads} threads, OpenMP available: {openmp.available()}")
    print("| kernel | grid | MB moved | 1 thread ms | thread pool ms | OpenMP ms | OpenMP GB/s |\n|---|---|---:|---:|---:|---:|---:|")
    for step in host.program.steps:
        if not isinstance(step, Launch):
            continue
        k = step.kernel
        ts = [torch.empty_strided(s.shape, s.strides, dtype=getattr(torch, s.dtype)).uniform_(0.5, 1.5)
              for s in k.signature.args]
        ptrs, total = [t.data_ptr() for t in ts], k.signature.grid_size
        code = k._module._keepalive
        serial = code.function(k.name, len(ts))
        parallel = openmp.Trampolines([(code.address(k.name), len(ts))])
        runs = {
            "serial": lambda: serial(*ptrs, 0, total),
            "pool": lambda: cpu.run_chunks(serial, ptrs, total, a.threads, a.threads),
            "openmp": lambda: parallel.run(0, ptrs, total, a.threads),
        }
        ms = {name: [] for name in runs}
        for _ in range(3):
            for name, f in runs.items():
                ms[name].append(_median_ms(f))
        best = {name: min(v) for name, v in ms.items()}
        mb = sum(t.numel() * t.element_size() for t in ts) / 1e6
        print(f"| @{k.name} | {list(k.signature.grid)} | {mb:.1f} | {best['serial']:.3f} | {best['pool']:.3f} | "
              f"{best['openmp']:.3f} | {mb / best['openmp']:.1f} |")


if __name__ == "__main__":
    main()
