"""The AArch64 CPU target (ARM servers, Apple Silicon under Linux): fused
kernels as NEON code, the kernel ABI and runtime of every CPU target.

    compilerctl translate k.mlir --target aarch64 --emit asm     # fmul v0.4s, ...

Convolutions and GEMMs stay library calls (oneDNN/ACL through ATen): tessera's
conv and int8 microkernels are x86 code. The layout table is not measured:
contiguous, as ATen's default.
"""

from __future__ import annotations

from tessera.passes.target_models import Rule, TargetModels, any_conv

from ..base import CpuTarget
from .codegen import AARCH64_TRIPLE, AArch64Target


class AArch64(CpuTarget):
    name = "aarch64"
    machines = ("aarch64", "arm64")
    llvm_name = "AArch64"

    def models(self) -> TargetModels:
        return TargetModels(conv_layouts=(Rule("conv (not measured: ATen's default)", any_conv, 1.0),))

    def codegen(self, features: str | None = None, cpu: str | None = None) -> AArch64Target:
        return AArch64Target(features=features, cpu=cpu)

    def codegen_triple(self) -> str:
        return AARCH64_TRIPLE
