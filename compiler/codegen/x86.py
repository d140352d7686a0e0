"""The x86 target: kernels walk a ``[lo, hi)`` slice of the flattened grid.

    define void @fused_0(ptr noalias %arg0, ptr noalias %arg1, i64 %lo, i64 %hi)

The walk goes row by row over the innermost grid dim: one de-flattening (div/
rem by constants) per row, and a plain counted loop inside it that LLVM's loop
vectorizer can widen when the body is a straight line (grid == tensor shape).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.compiler.codegen.errors import UnknownTarget
from tessera.compiler.codegen.target import BodyEmitter, Target, init_llvm
from tessera.compiler.codegen.types import I64

X86_TRIPLE = "x86_64-unknown-linux-gnu"


@functools.cache
def host_cpu_and_features() -> tuple[str, str]:
    init_llvm()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@functools.cache
def known_features() -> frozenset[str]:
    """The x86 feature names LLVM's host detection knows (each, present or not);
    empty on a host that is not x86 (no check then)."""
    init_llvm()
    if not llvm.get_process_triple().startswith(("x86_64", "i686", "i386")):
        return frozenset()
    return frozenset(llvm.get_host_cpu_features().keys())


# What LLVM's X86 feature table implies for the features tessera asks about
# (``+avx512vnni`` alone builds AVX-512 code, as with ``llc -mattr``).
IMPLIED_FEATURES: dict[str, tuple[str, ...]] = {
    "avx512vnni": ("avx512f",), "avx512bw": ("avx512f",), "avx512vl": ("avx512f",), "avx512bf16": ("avx512bw",),
    "avx512fp16": ("avx512bw", "avx512vl"), "avx512f": ("avx2", "fma", "f16c"), "avxvnni": ("avx2",),
    "fma": ("avx",), "f16c": ("avx",), "avx2": ("avx",),
}


def enabled_features(features: str) -> frozenset[str]:
    """The features an LLVM feature string turns on, with what they imply:
    ``"+avx512vnni"`` -> ``{"avx512vnni", "avx512f", "avx2", "fma", ...}``;
    ``"+avx2,-avx512f"`` -> ``{"avx2", "avx"}``."""
    on = [f.strip()[1:].lower() for f in features.split(",") if f.strip().startswith("+")]
    off = {f.strip()[1:].lower() for f in features.split(",") if f.strip().startswith("-")}
    seen: set[str] = set()
    while on:
        f = on.pop()
        if f not in seen and f not in off:
            seen.add(f)
            on.extend(IMPLIED_FEATURES.get(f, ()))
    return frozenset(seen)


class X86Target(Target):
    """x86-64 (ELF objects loadable by MCJIT). ``features=None`` is the host CPU;
    a feature string like ``"+avx2,+fma"`` or ``"+avx512f"`` builds for that CPU
    on any host (assembly only, unless this host has the features).
    ``prefer_vector_width`` (bits) defaults to 512 with AVX-512, else LLVM's choice."""

    name = "x86"
    artifact_kind = "obj"
    triple = X86_TRIPLE
    # The large code model with absolute relocations: MCJIT may place sections
    # more than 2 GiB apart, which RIP-relative (small model) references cannot span.
    reloc = "static"
    codemodel = "large"

    def __init__(self, features: str | None = None, cpu: str | None = None, prefer_vector_width: int | None = None):
        if features is None:
            host_cpu, host_features = host_cpu_and_features()
            self.cpu = host_cpu if cpu is None else cpu
            self.features = host_features
        else:
            bad = [f for f in features.split(",") if f and f[0] not in "+-"]
            if bad:
                raise UnknownTarget(f"x86 feature string {features!r}: each feature needs a leading '+' or '-', not {bad[0]!r}")
            known = known_features()
            unknown = [f for f in features.split(",") if f and known and f[1:] not in known]
            if unknown:
                raise UnknownTarget(f"x86 feature string {features!r}: {unknown[0][1:]!r} is not an x86 feature LLVM knows")
            self.cpu = cpu or ""
            self.features = features
        on = enabled_features(self.features)
        # LLVM's tuning for many AVX-512 CPUs keeps loops at 256 bits; like Inductor's
        # AVX-512 path we ask for 512 when the CPU has it (measured ~1.3x on erf/exp here).
        if prefer_vector_width is None and "avx512f" in on:
            prefer_vector_width = 512
        self.prefer_vector_width = prefer_vector_width
        self.native_f16_convert = bool(on & {"f16c", "avx512f", "avx512fp16"})
        # VCVTNEPS2BF16 flushes subnormal inputs to zero, unlike torch: always round in integers.
        self.native_bf16_convert = False

    def declare_kernel(self, module: ir.Module, name: str, num_buffers: int) -> tuple[ir.Function, list[ir.Value]]:
        ptr = self.buffer_pointer_type()
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * num_buffers + [I64, I64])
        fn = ir.Function(module, fnty, name=name)
        for i, a in enumerate(fn.args[:num_buffers]):
            a.name = f"arg{i}"
            a.add_attribute("noalias")
        fn.args[-2].name, fn.args[-1].name = "lo", "hi"
        return fn, list(fn.args[:num_buffers])

    def emit_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int], body: BodyEmitter) -> None:
        lo, hi = fn.args[-2], fn.args[-1]
        inner = ir.Constant(I64, grid[-1])
        rows = fn.append_basic_block("grid.row")
        row_body = fn.append_basic_block("grid.row.body")
        cols = fn.append_basic_block("grid.col")
        done = fn.append_basic_block("grid.done")
        entry = builder.block
        builder.branch(rows)

        builder.position_at_end(rows)
        flat = builder.phi(I64, name="flat")
        flat.add_incoming(lo, entry)
        more = builder.icmp_signed("<", flat, hi)
        builder.cbranch(more, row_body, done)

        builder.position_at_end(row_body)
        j0 = builder.urem(flat, inner, name="j0")
        rest = builder.udiv(flat, inner)
        outer: list[ir.Value] = []
        for g in reversed(grid[:-1]):
            gc = ir.Constant(I64, g)
            outer.append(builder.urem(rest, gc))
            rest = builder.udiv(rest, gc)
        outer.reverse()
        left = builder.add(builder.sub(hi, flat), j0, flags=["nsw"])
        jend = builder.select(builder.icmp_signed("<", left, inner), left, inner, name="jend")
        row_entry = builder.block
        builder.branch(cols)

        builder.position_at_end(cols)
        j = builder.phi(I64, name="j")
        j.add_incoming(j0, row_entry)
        body(builder, [*outer, j])
        j_next = builder.add(j, ir.Constant(I64, 1), flags=["nsw", "nuw"])
        flat_next = builder.add(flat, builder.sub(jend, j0), flags=["nsw"])
        latch = builder.block
        builder.cbranch(builder.icmp_signed("<", j_next, jend), cols, rows)
        j.add_incoming(j_next, latch)
        flat.add_incoming(flat_next, latch)

        builder.position_at_end(done)
        builder.ret_void()

    def emit_artifact(self, module: llvm.ModuleRef) -> bytes:
        return self.target_machine.emit_object(module)
