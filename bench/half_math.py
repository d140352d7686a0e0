"""What bf16 and f16 math costs on this CPU against f32: the data behind the x86
target's ``widened_halves`` (``widen-half``).

    .venv/bin/python bench/half_math.py [--threads 1]

Printed: the throughput of ``vdpbf16ps`` (AVX-512 BF16, two bf16 products per
f32 lane) against ``vfmadd231ps`` in independent chains (GFLOP/s, no memory),
and oneDNN's convs and MKL's GEMMs in f32, bf16 and f16 through torch
(channels-last, 3x3 convs), each with its ratio to f32. Where the half type's
library call is slower than f32, tessera computes the network in f32.
"""

from __future__ import annotations

import argparse
import time

import torch

from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.codegen import X86Target
from tessera.runtime.artifact import Artifact
from tessera.runtime.cpu import host_features
from tessera.runtime.device import Device
from tessera.runtime.options import RuntimeOptions
from tessera.runtime.signature import BufferSpec, KernelSignature

CHAINS = 12
"""Independent accumulators: enough to cover either instruction's latency on two ports."""
DP = "call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float> %a{i}, <32 x bfloat> %xb, <32 x bfloat> %xb)"
FMA = "call <16 x float> @llvm.fma.v16f32(<16 x float> %a{i}, <16 x float> %x, <16 x float> %x)"


def _chains_ir(target: X86Target, step: str) -> str:
    """A kernel running ``CHAINS`` chains of ``step`` for ``hi`` rounds (its grid's size)."""
    phis = "\n".join(f"  %a{i} = phi <16 x float> [%x, %entry], [%b{i}, %loop]" for i in range(CHAINS))
    steps = "\n".join(f"  %b{i} = " + step.format(i=i) for i in range(CHAINS))
    sums = "\n".join(f"  %s{i} = fadd <16 x float> %s{i - 1}, %b{i}" for i in range(1, CHAINS))
    return f"""target triple = "{target.triple}"
target datalayout = "{target.data_layout}"
declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, <32 x bfloat>, <32 x bfloat>)
declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)
define void @chains(ptr noalias %p, i64 %lo, i64 %hi) {{
entry:
  %x = load <16 x float>, ptr %p
  %xb = bitcast <16 x float> %x to <32 x bfloat>
  br label %loop
loop:
  %n = phi i64 [0, %entry], [%n1, %loop]
{phis}
{steps}
  %n1 = add i64 %n, 1
  %more = icmp slt i64 %n1, %hi
  br i1 %more, label %loop, label %done
done:
  %s0 = fadd <16 x float> %b0, zeroinitializer
{sums}
  store <16 x float> %s{CHAINS - 1}, ptr %p
  ret void
}}
"""


def chain_gflops(step: str, flops: int, rounds: int = 2_000_000) -> float:
    """GFLOP/s of one thread running ``CHAINS`` chains of ``step`` (``flops`` per instruction)."""
    target = X86Target(features="+avx512f,+avx512bw,+avx512vl,+avx512bf16,+fma,+avx2,+avx")
    sig = KernelSignature("chains", (rounds,), (BufferSpec((16,), (1,), "float32", True),))
    art = Artifact("x86", "obj", target.emit_artifact(optimize(_chains_ir(target, step), target)), (sig,),
                   target.cache_key())
    kernel = Device("cpu", RuntimeOptions(cache_dir=None, num_threads=1)).load(art).kernel("chains")
    x = torch.full((16,), 0.5)
    kernel.launch(x, chunks=1)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        kernel.launch(x, chunks=1)
        best = min(best, time.perf_counter() - t0)
    return CHAINS * rounds * flops / best / 1e9


def _ms(fn, reps: int = 20) -> float:
    fn()
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e3


def library_rates() -> None:
    """oneDNN convs and MKL GEMMs per dtype, GFLOP/s and ratio to f32."""
    cases = [("conv 64->64 3x3 56x56", lambda dt: _conv(64, 56, dt), 2 * 64 * 64 * 9 * 56 * 56),
             ("conv 256->256 3x3 14x14", lambda dt: _conv(256, 14, dt), 2 * 256 * 256 * 9 * 14 * 14),
             ("mm 256x1024 @ 1024x1024", lambda dt: _mm(dt), 2 * 256 * 1024 * 1024)]
    print("| library call | f32 GFLOP/s | bf16 GFLOP/s (x f32) | f16 GFLOP/s (x f32) |")
    print("| --- | --- | --- | --- |")
    for name, make, flops in cases:
        rates = {dt: flops / _ms(make(dt)) / 1e6 for dt in (torch.float32, torch.bfloat16, torch.float16)}
        f32 = rates[torch.float32]
        print(f"| {name} | {f32:.0f} | {rates[torch.bfloat16]:.0f} ({rates[torch.bfloat16] / f32:.2f}) "
              f"| {rates[torch.float16]:.0f} ({rates[torch.float16] / f32:.2f}) |")


def _conv(c: int, size: int, dt: torch.dtype):
    x = torch.randn(1, c, size, size).to(dt).to(memory_format=torch.channels_last)
    w = torch.randn(c, c, 3, 3).to(dt).to(memory_format=torch.channels_last)
    return lambda: torch.conv2d(x, w, padding=1)


def _mm(dt: torch.dtype):
    a, b = torch.randn(256, 1024).to(dt), torch.randn(1024, 1024).to(dt)
    return lambda: a @ b


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    have = host_features()
    print(f"torch {torch.__version__}, {args.threads} threads; AMX: "
          f"{', '.join(sorted(f for f in have if f.startswith('amx'))) or 'none'}")
    if {"avx512f", "avx512bf16"} <= have:
        fma, dp = chain_gflops(FMA, 32), chain_gflops(DP, 64)
        print(f"vfmadd231ps zmm {fma:.1f} GFLOP/s; vdpbf16ps zmm {dp:.1f} GFLOP/s ({dp / fma:.2f}x f32), 1 thread")
    else:
        print("no AVX-512 BF16: vdpbf16ps not measured")
    with torch.no_grad():
        library_rates()


if __name__ == "__main__":
    main()
