"""Times each target's graph pipeline on a large graph: a stack of video-VAE
blocks (GroupNorm statistics and affine, SiLU, causal time pad, conv3d,
residual add), built as ``tsr`` text until it holds at least ``--ops`` ops.

    .venv/bin/python bench/pipeline_scale.py [--ops 2000] [--target x86]

Prints the op count, the parse time and the pipeline's time, per pass.
torch is imported first, as it is under ``torch.compile`` (``cast-constants``
rounds literals with it): its import is start-up, not pipeline, time.
"""

from __future__ import annotations

import argparse
import time

import torch  # noqa: F401  (see the docstring)

from tessera.compiler.context import make_context
from tessera.compiler.ir_io import parse_module
from tessera.compiler.pass_pipeline import build_pipeline, target_pipeline
from tessera.dialects import tsr

C, G, D, H, W = 32, 8, 4, 16, 16
X = f"tensor<1x{C}x{D}x{H}x{W}xf32, #tsr.layout<ncdhw>>"
XP = f"tensor<1x{C}x{D + 2}x{H + 2}x{W + 2}xf32, #tsr.layout<ncdhw>>"
V = f"tensor<1x{G}x{C // G * D}x{H * W}xf32, #tsr.layout<nchw>>"
S = f"tensor<1x{G}x1x1xf32, #tsr.layout<nchw>>"
B = f"tensor<1x{C}x1x1x1xf32, #tsr.layout<ncdhw>>"
WT = f"tensor<{C}x{C}x3x3x3xf32, #tsr.layout<ncdhw>>"


def block(i: int, x: str) -> tuple[list[str], str]:
    """One GroupNorm -> SiLU -> causal pad -> conv3d -> + residual block (17 ops)."""
    p = f"%b{i}_"
    lines = [
        f"{p}v = tsr.reshape {x} : ({X}) -> {V}",
        f"{p}var = tsr.var {p}v {{dims = array<i64: 2, 3>, keepdim = true, correction = 0.0 : f64}} : ({V}) -> {S}",
        f"{p}mean = tsr.mean {p}v {{dims = array<i64: 2, 3>, keepdim = true}} : ({V}) -> {S}",
        f"{p}e = tsr.add {p}var, %eps : ({S}, f64) -> {S}",
        f"{p}r = tsr.rsqrt {p}e : ({S}) -> {S}",
        f"{p}n = tsr.neg {p}mean : ({S}) -> {S}",
        f"{p}sh = tsr.mul {p}n, {p}r : ({S}, {S}) -> {S}",
        f"{p}rr = tsr.reshape {p}r : ({S}) -> tensor<1x{G}x1xf32, #tsr.layout<ncl>>",
        f"{p}rs = tsr.expand {p}rr : (tensor<1x{G}x1xf32, #tsr.layout<ncl>>) -> tensor<1x{G}x{C // G}xf32, #tsr.layout<ncl>>",
        f"{p}scale = tsr.reshape {p}rs : (tensor<1x{G}x{C // G}xf32, #tsr.layout<ncl>>) -> {B}",
        f"{p}m = tsr.mul {x}, {p}scale : ({X}, {B}) -> {X}",
        f"{p}a = tsr.add {p}m, %gamma : ({X}, {B}) -> {X}",
        f"{p}s = tsr.silu {p}a : ({X}) -> {X}",
        f"{p}pad = tsr.pad {p}s, %zero {{low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}} : ({X}, f64) -> {XP}",
        f"{p}c = tsr.conv {p}pad, %w {{stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, "
        f"dilation = array<i64: 1, 1, 1>, groups = 1 : i64}} : ({XP}, {WT}) -> {X}",
        f"{p}y = tsr.add {x}, {p}c : ({X}, {X}) -> {X}",
        f"{p}o = tsr.tanh {p}y : ({X}) -> {X}",
    ]
    return lines, f"{p}o"


def graph(min_ops: int) -> str:
    body = ["%eps = tsr.constant 1.0e-05 : f64", "%zero = tsr.constant 0.0 : f64"]
    x, i = "%x", 0
    while len(body) < min_ops:
        lines, x = block(i, x)
        body += lines
        i += 1
    text = "\n    ".join([*body, f"func.return {x} : {X}"])
    return f"func.func @forward(%x: {X}, %w: {WT}, %gamma: {B}) -> {X} {{\n    {text}\n}}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=2000)
    ap.add_argument("--target", default="x86")
    a = ap.parse_args()
    text = graph(a.ops)
    t0 = time.perf_counter()
    module = parse_module(text, "scale.mlir")
    t_parse = time.perf_counter() - t0
    n_ops = sum(1 for op in module.walk() if op.dialect_name() == "tsr")
    ctx = make_context()
    per_pass: list[tuple[str, float]] = []
    for spec in target_pipeline(a.target):
        t0 = time.perf_counter()
        build_pipeline(spec).apply(ctx, module)
        per_pass.append((spec, time.perf_counter() - t0))
    total = sum(t for _, t in per_pass)
    relayouts = sum(isinstance(op, tsr.RelayoutOp) for op in module.walk())
    print(f"graph: {n_ops} tsr ops; parse {t_parse:.2f} s")
    for spec, t in per_pass:
        print(f"  {spec:40s} {t * 1e3:8.1f} ms")
    print(f"{a.target} pipeline: {total:.2f} s for {n_ops} ops; {relayouts} relayouts left")


if __name__ == "__main__":
    main()
