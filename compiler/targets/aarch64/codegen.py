"""The AArch64 target's LLVM side: NEON (and SVE where asked) on the shared CPU kernel ABI.

    AArch64Target()                        # this host when it is AArch64, else a generic NEON CPU
    AArch64Target(features="+neon,+sve")   # any AArch64 CPU with those (assembly on any host)
"""

from __future__ import annotations

import platform

import llvmlite.binding as llvm

from tessera.compiler.codegen.cpu import CpuLlvmTarget
from tessera.compiler.codegen.errors import UnknownTarget
from tessera.compiler.codegen.llvm_target import init_llvm

AARCH64_TRIPLE = "aarch64-unknown-linux-gnu"
KNOWN_FEATURES = ("neon", "fp-armv8", "fullfp16", "bf16", "dotprod", "i8mm", "sve", "sve2")
"""The features tessera accepts in a feature string (LLVM knows more; these change its code)."""


class AArch64Target(CpuLlvmTarget):
    name = "aarch64"
    triple = AARCH64_TRIPLE

    def __init__(self, features: str | None = None, cpu: str | None = None):
        if features is None and platform.machine().lower() in ("aarch64", "arm64"):
            init_llvm()
            self.cpu, self.features = cpu or llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        else:
            given = [f.strip() for f in (features or "+neon").split(",") if f.strip()]
            bad = [f for f in given if f[0] not in "+-" or f[1:] not in KNOWN_FEATURES]
            if bad:
                raise UnknownTarget(f"aarch64 feature string {features!r}: {bad[0]!r} is not one of "
                                    f"+{', +'.join(KNOWN_FEATURES)}")
            self.cpu, self.features = cpu or "generic", ",".join(given)
        self.native_f16_convert = True  # FCVT between half and single is in the base ISA
        self.native_bf16_convert = False  # BFCVT needs +bf16: round in integers, as on x86
