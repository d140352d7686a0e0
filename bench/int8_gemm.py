"""tessera's exact int8 GEMM against torch's int8 and fp32 matmuls on this CPU.

    .venv/bin/python bench/int8_gemm.py [--threads 2] [--reps 15] [--shapes 1024x1024x1024,...]

Per shape (M x N x K), in one process, interleaved round by round, medians
after warm-up (GOPS = 2*M*N*K / time):

* tessera, every path this CPU runs (``avx512vnni``/``avxvnni``/``avx2``):
  u8·s8 and s8·s8 to int32, and u8·s8 with the fused quantized-linear
  epilogue (per-row and per-channel scales, bias; float32 out). B is packed
  once beforehand (a frozen weight), like the peers' prepacked weights.
* ``torch._int_mm`` (s8·s8 and u8·s8): exact. Measured with torch 2.13 on
  this VM (AVX-512 VNNI + AMX): fast for large M (about 450 GOPS at 1024^3
  on one thread), about 3 GOPS at M = 1; 1-2 GOPS on AVX2-only hosts.
* fp32 ``torch.mm``.
* oneDNN's quantized linear (``torch.ops.quantized.linear``, engine
  ``onednn``, u8 activations, per-channel s8 weight prepacked, u8 out), and
  FBGEMM's dynamic quantized linear (float in and out) for reference. On AVX2
  hosts their u8·s8 kernels use ``vpmaddubsw``, whose int16 pair sums saturate.

The core's VNNI peak is measured with a loop of independent ``vpdpbusd``
(no memory), on 1 and on ``--threads`` threads. Shared machines are noisy:
the min-max spread of each row is printed. When another process holds a core,
torch's OpenMP ops with 2 threads stall in scheduler-quantum steps (about 8 ms
per call, whatever the size): compare ``--threads 1`` too, and check that the
2-thread VNNI peak is twice the 1-thread one. Timing is never a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import torch

from tessera.compiler.targets.x86.int8_gemm import ISAS, Int8GemmSpec, can_run, load_int8_gemm, pack_b

SHAPES = [(1024, 1024, 1024), (64, 4096, 4096), (1, 4096, 4096)]


# -- the core's peak ---------------------------------------------------------------------
def vnni_peak_gops(isa: str, threads: int, iters: int = 400_000) -> float:
    """int8 GOPS of ``threads`` threads each running independent multiply-adds
    (the path's own ``madd``, 24 or 12 accumulators) with no memory traffic."""
    from llvmlite import ir

    from tessera.compiler.targets.x86.int8_gemm.build import gemm_target
    from tessera.compiler.codegen.irbuild import I32, byte_ptr, counted_loop, i64
    from tessera.compiler.targets.x86.int8_gemm.isa import get_isa
    from tessera.compiler.codegen.pipeline import optimize
    from tessera.runtime.artifact import Artifact
    from tessera.runtime.device import Device
    from tessera.runtime.signature import BufferSpec, KernelSignature

    path, target = get_isa(isa), gemm_target(isa)
    naccs = 24 if path.lanes == 16 else 12
    module = ir.Module()
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, (buf,) = target.declare_kernel(module, "peak", 1)
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def point(b, idx):
        ops = path.b_operands(b, buf)
        a_op = path.a_operand(b, b.load(buf, typ=I32), False)
        accs = counted_loop(b, iters, [ir.Constant(path.acc_type, None)] * naccs,
                            lambda b, _, accs: [path.madd(b, x, a_op, ops[i % len(ops)], False) for i, x in enumerate(accs)],
                            "peak")
        total = accs[0]
        for x in accs[1:]:
            total = b.xor(total, x)
        b.store(total, byte_ptr(b, buf, b.mul(idx[0], i64(64))), align=1)

    target.emit_grid(b, fn, (threads,), point)
    sig = KernelSignature("peak", (threads,), (BufferSpec((64 * threads + 64,), (1,), "int8", True),))
    art = Artifact("x86", "obj", target.emit_artifact(optimize(str(module), target)), (sig,), target.cache_key())
    kern = Device("cpu").load(art).kernel("peak")
    x = torch.ones(64 * threads + 64, dtype=torch.int8)
    kern.launch(x, chunks=threads)
    best = min(_time(lambda: kern.launch(x, chunks=threads)) for _ in range(5))
    macs_per_instr = 4 * path.lanes
    return 2 * iters * naccs * macs_per_instr * threads / best / 1e9


# -- candidates --------------------------------------------------------------------------
def _time(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def tessera_candidates(m: int, n: int, k: int, a_u8, a_s8, b, sa, sb, bias) -> dict[str, Callable[[], object]]:
    out: dict[str, Callable[[], object]] = {}
    for isa in ISAS:
        if not can_run(isa):
            continue
        pu, ps = pack_b(b, isa), pack_b(b, isa, a_signed=True)
        c32, f32 = torch.empty(m, n, dtype=torch.int32), torch.empty(m, n)
        ku = load_int8_gemm(Int8GemmSpec(m, n, k, isa=isa))
        ks = load_int8_gemm(Int8GemmSpec(m, n, k, a_signed=True, isa=isa))
        kf = load_int8_gemm(Int8GemmSpec(m, n, k, isa=isa, epilogue="scale_bias"))
        out[f"tessera {isa} u8s8->s32"] = lambda ku=ku, pu=pu, c32=c32: ku(a_u8, pu.data, c32)
        out[f"tessera {isa} s8s8->s32"] = lambda ks=ks, ps=ps, c32=c32: ks(a_s8, ps.data, c32)
        out[f"tessera {isa} u8s8 scale+bias->f32"] = lambda kf=kf, pu=pu, f32=f32: kf(a_u8, pu.data, sa, sb, bias, f32)
    return out


def torch_candidates(m: int, n: int, k: int, a_u8, a_s8, b, sa, sb, bias) -> tuple[dict, dict]:
    """(fast peers, slow peers: timed in fewer rounds)."""
    fast: dict[str, Callable[[], object]] = {}
    x, w = torch.randn(m, k), torch.randn(k, n)
    fast["torch.mm fp32"] = lambda: torch.mm(x, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf = b.t().contiguous().float()
        w_scale = (torch.rand(n, dtype=torch.double) * 0.01 + 0.001)
        for engine, label in (("onednn", "oneDNN quantized.linear u8s8->u8 (static)"),
                              ("fbgemm", "FBGEMM quantized.linear_dynamic f32")):
            try:
                torch.backends.quantized.engine = engine
                wq = torch.quantize_per_channel(wf * w_scale[:, None].float(), w_scale, torch.zeros(n, dtype=torch.long), 0, torch.qint8)
                packed = torch.ops.quantized.linear_prepack(wq, bias)
            except RuntimeError as err:
                print(f"  ({engine} unavailable: {err})")
                continue
            if engine == "onednn":
                xq = torch._make_per_tensor_quantized_tensor(a_u8, 0.05, 0)

                def run(packed=packed, xq=xq):
                    torch.backends.quantized.engine = "onednn"
                    return torch.ops.quantized.linear(xq, packed, 0.5, 0)
            else:
                xf = a_u8.float() * 0.05

                def run(packed=packed, xf=xf):
                    torch.backends.quantized.engine = "fbgemm"
                    return torch.ops.quantized.linear_dynamic(xf, packed)
            fast[label] = run
    slow: dict[str, Callable[[], object]] = {}
    try:
        torch._int_mm(a_s8, b)
        slow["torch._int_mm s8s8"] = lambda: torch._int_mm(a_s8, b)
        slow["torch._int_mm u8s8"] = lambda: torch._int_mm(a_u8, b)
    except RuntimeError as err:
        print(f"  (torch._int_mm refuses {m}x{n}x{k}: {str(err).splitlines()[0]})")
    return fast, slow


def run_shape(m: int, n: int, k: int, reps: int, slow_reps: int) -> dict[str, list[float]]:
    g = torch.Generator().manual_seed(0)
    a_u8 = torch.randint(0, 256, (m, k), dtype=torch.uint8, generator=g)
    a_s8 = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8, generator=g)
    sa, sb, bias = torch.rand(m, generator=g) * 0.1, torch.rand(n, generator=g) * 0.01, torch.randn(n, generator=g)
    cands = tessera_candidates(m, n, k, a_u8, a_s8, b, sa, sb, bias)
    fast, slow = torch_candidates(m, n, k, a_u8, a_s8, b, sa, sb, bias)
    cands.update(fast)
    times: dict[str, list[float]] = {name: [] for name in [*cands, *slow]}
    for fn in [*cands.values(), *slow.values()]:  # warm-up (and compile)
        fn()
    for r in range(reps):
        for name, fn in cands.items():
            times[name].append(_time(fn))
        if r < slow_reps:
            for name, fn in slow.items():
                times[name].append(_time(fn))
    return times


def report(m: int, n: int, k: int, times: dict[str, list[float]], peak: float | None) -> None:
    ops = 2 * m * n * k
    gops = {name: ops / statistics.median(ts) / 1e9 for name, ts in times.items()}
    print(f"\n## {m}x{n}x{k}  ({ops / 1e9:.2f} GOP)")
    print(f"{'':<46} {'median ms':>10} {'GOPS':>8} {'min-max GOPS':>16}")
    for name, ts in times.items():
        spread = f"{ops / max(ts) / 1e9:.0f}-{ops / min(ts) / 1e9:.0f}"
        extra = f"  {100 * gops[name] / peak:.0f}% of VNNI peak" if peak and name.startswith("tessera") else ""
        print(f"{name:<46} {statistics.median(ts) * 1e3:>10.3f} {gops[name]:>8.1f} {spread:>16}{extra}")
    best_name = max((nm for nm in gops if nm.startswith("tessera") and "->s32" in nm and "u8s8" in nm), key=gops.get, default=None)
    fused = max((nm for nm in gops if nm.startswith("tessera") and "f32" in nm), key=gops.get, default=None)
    if best_name is None:
        return
    print(f"ratios (tessera best u8s8->s32 = {best_name.split()[1]}; fused = {fused.split()[1]}):")
    for peer in ("torch._int_mm s8s8", "torch._int_mm u8s8", "torch.mm fp32"):
        if peer in gops:
            print(f"  tessera / {peer:<40} {gops[best_name] / gops[peer]:8.1f}x")
    for peer in ("oneDNN quantized.linear u8s8->u8 (static)", "FBGEMM quantized.linear_dynamic f32"):
        if peer in gops:
            print(f"  tessera fused / {peer:<34} {gops[fused] / gops[peer]:8.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--slow-reps", type=int, default=3, help="timed rounds of torch._int_mm (about 1 s each)")
    p.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in SHAPES))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads; runnable paths: {[i for i in ISAS if can_run(i)]}")
    peak = None
    for isa in ("avx512vnni", "avxvnni"):
        if can_run(isa):
            one, many = vnni_peak_gops(isa, 1), vnni_peak_gops(isa, args.threads)
            print(f"{isa} peak (independent vpdpbusd, no memory): {one:.0f} GOPS on 1 thread, {many:.0f} on {args.threads}")
            peak = many if peak is None else peak
    for shape in args.shapes.split(","):
        m, n, k = (int(x) for x in shape.split("x"))
        report(m, n, k, run_shape(m, n, k, args.reps, args.slow_reps), peak)


if __name__ == "__main__":
    main()
