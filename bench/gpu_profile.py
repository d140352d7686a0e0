"""Where a compiled model's time goes on a CUDA GPU: wall time per call, the GPU's busy time
per call, and the kernels (tessera's PTX and the libraries') by GPU time, for eager and tessera.

    python3 bench/gpu_profile.py [--models video_vae_block,resnet_block] [--reps 20] [--top 12]

Each example's ``benchmark()`` size, full float32 (no TF32). Wall time is a host clock around
``reps`` calls ended by a synchronize; GPU time is the sum of the kernels' durations from
``torch.profiler`` over the same number of calls. Wall well above GPU time means the GPU
waits on the host (launches, Python between them); GPU time well above eager's means slower
kernels or more of them.
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from tessera.compiler.model_loader import load_example

ROOT = Path(__file__).resolve().parent.parent


def _wall_ms(fn, args, reps: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / reps


def _kernels(fn, args, reps: int) -> tuple[dict[str, tuple[float, int]], float]:
    """GPU time (ms per call) and launches per call of each kernel name, and their total."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn(*args)
        torch.cuda.synchronize()
    by: dict[str, list[float]] = collections.defaultdict(list)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            by[e.name].append(e.time_range.elapsed_us() / 1e3)
    table = {name: (sum(ts) / reps, len(ts) // reps) for name, ts in by.items()}
    return table, sum(ms for ms, _ in table.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="video_vae_block,resnet_block")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for name in a.models.split(","):
        model, args = load_example(str(ROOT / "examples" / f"{name}.py"), "benchmark")
        model, args = model.cuda().eval(), tuple(x.cuda() for x in args)
        compiled = torch.compile(model, backend="tessera")
        with torch.no_grad():
            for mode, fn in (("eager", model), ("tessera", compiled)):
                for _ in range(3):
                    fn(*args)
                wall = _wall_ms(fn, args, a.reps)
                table, busy = _kernels(fn, args, a.reps)
                launches = sum(n for _, n in table.values())
                print(f"\n## {name} {mode}: wall {wall:.3f} ms/call, GPU busy {busy:.3f} ms/call, "
                      f"{launches} kernel launches/call")
                for k, (ms, n) in sorted(table.items(), key=lambda kv: -kv[1][0])[: a.top]:
                    print(f"  {ms:8.4f} ms  x{n:<3d} {k[:110]}")


if __name__ == "__main__":
    main()
