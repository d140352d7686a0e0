"""PyTorch's OpInfo ``op_db`` through tessera, as a report: per sample
compiled / compiled+aten / fallback / crash / wrong (``test/py/op_db_harness.py``),
totals and shares, the fallback reasons and the ops through ATen, most common
first; every outcome as JSON lines with ``--json``.

    .venv/bin/python bench/op_db_report.py [--samples 8] [--dtype float32] [--backward] [--dynamic] [--ops add,mul] [--json out.jsonl]

``--dynamic`` compiles each sample with ``dynamic=True`` (symbolic sizes, issue 17).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "py"))

from op_db_harness import FAILING, is_nondeterministic, op_id, quiet, run_sample, samples  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=8, help="samples per op")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (symbolic sizes)")
    ap.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    ap.add_argument("--json", default="", help="write every outcome here, one JSON object a line")
    a = ap.parse_args()
    from torch.testing._internal.common_methods_invocations import op_db

    dtype = getattr(torch, a.dtype)
    wanted = set(filter(None, a.ops.split(",")))
    out = open(a.json, "w") if a.json else None
    counts: collections.Counter = collections.Counter()
    reasons: collections.Counter = collections.Counter()
    aten: collections.Counter = collections.Counter()
    failures = []
    for op in op_db:
        name = op_id(op)
        if is_nondeterministic(op) or (wanted and name not in wanted and op.name not in wanted):
            continue
        for i, sample in enumerate(samples(op, dtype, a.samples, requires_grad=a.backward)):
            with quiet():
                o = run_sample(op, sample, dtype, a.backward, a.dynamic)
            counts[o.status] += 1
            if o.status == "fallback":
                reasons[o.reason[:140]] += 1
            elif o.status == "compiled+aten":
                aten.update(o.reason.split(", "))
            elif o.status in FAILING:
                failures.append(f"{name} #{i} {o.status}: {o.reason}")
            if out:
                out.write(json.dumps({"op": name, "sample": i, "status": o.status, "reason": o.reason}) + "\n")
    ran = sum(v for k, v in counts.items() if k != "skipped")
    print(f"op_db, {a.dtype} {'backward' if a.backward else 'forward'}{', dynamic=True' if a.dynamic else ''}, up to {a.samples} samples per op: "
          f"{ran} samples that eager runs ({counts['skipped']} skipped)")
    for k in ("compiled", "compiled+aten", "fallback", "no-graph", "crash", "wrong"):
        print(f"  {k:14s} {counts[k]:6d}  {100 * counts[k] / max(ran, 1):5.1f}%")
    print("fallback reasons:")
    for r, n in reasons.most_common(15):
        print(f"  {n:5d}  {r}")
    print("ops through ATen in compiled graphs:")
    for r, n in aten.most_common(25):
        print(f"  {n:5d}  {r}")
    for f in failures:
        print("FAIL", f)


if __name__ == "__main__":
    main()
