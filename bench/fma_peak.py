"""This CPU's fp32 FMA peak, measured: independent ``llvm.fma`` vector chains, no memory.

    .venv/bin/python bench/fma_peak.py [--threads 2] [--iters 2000000]

A kernel built with llvmlite (``X86Target``, loaded by the runtime like every
tessera kernel) runs ``iters`` rounds of ``accs`` independent FMAs
(``acc = fma(acc, x, y)``) per thread: enough chains to cover the FMA latency
(4 cycles) times the FMA ports (2 on Sapphire Rapids), so the loop runs at
the ports' throughput. Printed: GFLOP/s (2 per lane per FMA) on 1 thread and
on ``--threads`` threads, for zmm (AVX-512, 16 lanes) when the host has it
and ymm (AVX2, 8 lanes). ``bench/conv_kernels.py`` reports its kernels as a
percentage of these figures (``peak_gflops``).
"""

from __future__ import annotations

import argparse
import time

import torch
from llvmlite import ir

from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.codegen import X86Target
from tessera.runtime.artifact import Artifact
from tessera.runtime.cpu import host_features
from tessera.runtime.device import Device
from tessera.runtime.options import RuntimeOptions
from tessera.runtime.signature import BufferSpec, KernelSignature

F32, I64 = ir.FloatType(), ir.IntType(64)
FEATURES = {16: "+avx512f,+avx512vl,+avx2,+avx,+fma", 8: "+avx2,+avx,+fma"}


def _peak_kernel(lanes: int, threads: int, iters: int, accs: int):
    target = X86Target(features=FEATURES[lanes])
    vt = ir.VectorType(F32, lanes)
    module = ir.Module(name=f"fma_peak_{lanes}")
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, (buf,) = target.declare_kernel(module, "fma_peak", 1)
    fma = ir.Function(module, ir.FunctionType(vt, [vt, vt, vt]), f"llvm.fma.v{lanes}f32")
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def point(b: ir.IRBuilder, idx) -> None:
        base = b.gep(buf, [b.mul(idx[0], ir.Constant(I64, lanes))], source_etype=F32)
        x = b.load(base, typ=vt, align=4)
        y = b.fmul(x, x)
        pre = b.block
        loop, done = b.function.append_basic_block("peak"), b.function.append_basic_block("peak.end")
        b.branch(loop)
        b.position_at_end(loop)
        iv = b.phi(I64)
        iv.add_incoming(ir.Constant(I64, 0), pre)
        phis = []
        for _ in range(accs):
            p = b.phi(vt)
            p.add_incoming(x, pre)
            phis.append(p)
        new = [b.call(fma, [p, x, y]) for p in phis]
        nxt = b.add(iv, ir.Constant(I64, 1))
        iv.add_incoming(nxt, loop)
        for p, v in zip(phis, new):
            p.add_incoming(v, loop)
        b.cbranch(b.icmp_signed("<", nxt, ir.Constant(I64, iters)), loop, done)
        b.position_at_end(done)
        total = new[0]
        for v in new[1:]:
            total = b.fadd(total, v)
        b.store(total, base, align=4)

    target.emit_grid(b, fn, (threads,), point)
    sig = KernelSignature("fma_peak", (threads,), (BufferSpec((lanes * threads,), (1,), "float32", True),))
    art = Artifact("x86", "obj", target.emit_artifact(optimize(str(module), target)), (sig,), target.cache_key())
    return Device("cpu", RuntimeOptions(cache_dir=None, num_threads=threads)).load(art).kernel("fma_peak")


def peak_gflops(lanes: int, threads: int, iters: int = 2_000_000, accs: int = 12, repeats: int = 5) -> float:
    """fp32 GFLOP/s of ``threads`` threads of independent ``lanes``-wide FMAs (best of ``repeats``)."""
    kern = _peak_kernel(lanes, threads, iters, accs)
    x = torch.full((lanes * threads,), 0.5)
    kern.launch(x, chunks=threads)
    best = float("inf")
    for _ in range(repeats):
        x.fill_(0.5)
        t0 = time.perf_counter()
        kern.launch(x, chunks=threads)
        best = min(best, time.perf_counter() - t0)
    return 2 * lanes * accs * iters * threads / best / 1e9


def widths() -> list[int]:
    have = host_features()
    return [w for w, need in ((16, "avx512f"), (8, "avx2")) if need in have and "fma" in have]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iters", type=int, default=2_000_000)
    args = p.parse_args()
    print(f"fp32 FMA peak (llvm.fma, 12 independent accumulators, {args.iters} rounds)")
    for lanes in widths():
        one = peak_gflops(lanes, 1, args.iters)
        many = peak_gflops(lanes, args.threads, args.iters)
        name = "zmm (AVX-512)" if lanes == 16 else "ymm (AVX2)"
        print(f"  {name:<14} 1 thread {one:7.1f} GFLOP/s   {args.threads} threads {many:7.1f} GFLOP/s"
              f"   ({many / one:.2f}x)")


if __name__ == "__main__":
    main()
