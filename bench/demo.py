"""The main job: compile a conv-heavy model with tessera and compare it with
eager PyTorch and Inductor.

    make demo            # or: .venv/bin/python bench/demo.py [MODEL.py]

Prints the graph tessera built (op counts, layouts, ATen fallbacks), the
largest difference of each compiled model's output from eager on random
inputs, and steady-state times measured in this one process: tessera runs
compiled x86 kernels (fused GroupNorm/SiLU/pad/relayout kernels) and oneDNN
convolutions in the layouts its passes chose. ``bench/models.py`` has the
full comparison at realistic sizes.
"""

from __future__ import annotations

import collections
import logging
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def _median_ms(fn, *args, warmup: int = 2, reps: int = 5) -> float:
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def main(argv: list[str]) -> int:
    from tessera.compiler.model_loader import load_example

    path = argv[0] if argv else str(ROOT / "examples" / "video_vae_block.py")
    model, args = load_example(path)
    torch.manual_seed(0)
    args = tuple(torch.randn_like(a) if a.is_floating_point() else a for a in args)
    print(f"model: {path}  inputs: {[tuple(a.shape) for a in args]}  threads: {torch.get_num_threads()}")

    logging.getLogger("tessera").setLevel(logging.WARNING)

    with torch.no_grad():
        eager = _first(model(*args))
        t0 = time.perf_counter()
        tessera_fn = torch.compile(model, backend="tessera")
        tessera_out = _first(tessera_fn(*args))
        tessera_compile = time.perf_counter() - t0
        torch._dynamo.reset()
        t0 = time.perf_counter()
        inductor_fn = torch.compile(model)
        inductor_out = _first(inductor_fn(*args))
        inductor_compile = time.perf_counter() - t0

        torch._dynamo.reset()
        from tessera.compiler.capture import capture
        from tessera.compiler.fx_import import import_graph

        from tessera.compiler.stages import run_stages

        for gm in capture(model, args).forward:
            result = import_graph(gm)
            stages = run_stages(gm, "x86", "kernel")
            kernels = stages["kernel"].value.kernels
            host_ops = collections.Counter(op.name for op in stages["kernel"].value.host.walk() if op.name.startswith("tsr."))
            ops = collections.Counter(op.name for op in result.module.walk() if op.name.startswith("tsr."))
            layouts = collections.Counter(
                str(r.type.encoding) for op in result.module.walk() for r in op.results if hasattr(r.type, "encoding")
            )
            print("\ntessera graph (tsr):")
            print("  ops:     " + ", ".join(f"{n} x{c}" for n, c in ops.most_common()))
            print("  layouts: " + ", ".join(f"{n} x{c}" for n, c in layouts.most_common()))
            print("  kept as ATen calls: " + (", ".join(f"{n} x{c}" for n, c in result.fallbacks.items()) or "none"))
            print(f"  compiled: {sum(1 for _ in kernels.ops)} kernels; host program: "
                  + ", ".join(f"{n} x{c}" for n, c in host_ops.most_common()))

        def err(x):
            return (x.float() - eager.float()).abs().max().item()

        print("\nresult against eager (max abs difference, random inputs):")
        print(f"  tessera : {err(tessera_out):.3e}   (first call incl. compile {tessera_compile:.1f} s)")
        print(f"  inductor: {err(inductor_out):.3e}   (first call incl. compile {inductor_compile:.1f} s)")
        ok = torch.allclose(tessera_out, eager, rtol=1e-4, atol=1e-4)

        e_ms = _median_ms(model, *args)
        t_ms = _median_ms(tessera_fn, *args)
        i_ms = _median_ms(inductor_fn, *args)
        print("\nsteady state, median of 5 (ms):")
        print(f"  eager {e_ms:.2f}   inductor {i_ms:.2f}   tessera {t_ms:.2f}")
        print(f"  time ratios (lower is faster): tessera/eager {t_ms / e_ms:.2f}   tessera/inductor {t_ms / i_ms:.2f}")
    print("\nOK: tessera matches eager" if ok else "\nMISMATCH: tessera differs from eager")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
