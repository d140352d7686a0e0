"""The x86 target's LLVM side: the host's CPU and features (AVX2, AVX-512, VNNI)
on the shared CPU kernel ABI (``codegen/cpu.py``).

    X86Target()                       # this host: cpu and features from LLVM's host detection
    X86Target(features="+avx2,+fma")  # any x86 CPU with those (assembly on any host)
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from tessera.compiler.codegen.cpu import CpuLlvmTarget
from tessera.compiler.codegen.errors import UnknownTarget
from tessera.compiler.codegen.llvm_target import init_llvm

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


class X86Target(CpuLlvmTarget):
    """x86-64 (ELF objects loadable by MCJIT). ``features=None`` is the host CPU;
    a feature string like ``"+avx2,+fma"`` or ``"+avx512f"`` builds for that CPU
    on any host (assembly only, unless this host has the features).
    ``prefer_vector_width`` (bits) defaults to 512 with AVX-512, else LLVM's choice."""

    name = "x86"
    triple = X86_TRIPLE

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
