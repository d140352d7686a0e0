"""Code generation shared by every LLVM target: kernel IR (docs/kernel-ir.md) to
LLVM IR, optimized, and to machine code.

    from tessera.compiler.targets import codegen_target
    from tessera.compiler.codegen import assembly, llvm_ir
    target = codegen_target("x86", features="+avx512f")
    print(assembly(kernels_module, target))          # zmm everywhere the loops allow

One emitter (``llvm_emitter``) with per-target knobs (``llvm_target.LlvmTarget``),
the kernel ABI CPU targets share (``cpu.py``) and the one-thread-per-point
mapping GPU targets share (``gpu.py``); each target's own part is in its folder
under ``compiler/targets``.
"""

from __future__ import annotations

from tessera.compiler.codegen.errors import CodegenError, UnknownTarget
from tessera.compiler.codegen.kernel_form import KernelForm, analyze_kernel, kernel_signatures
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.pipeline import (
    assembly,
    link_llvm_ir,
    llvm_ir,
    optimize,
    optimized_llvm_ir,
)

__all__ = [
    "CodegenError", "KernelForm", "LlvmTarget", "UnknownTarget", "analyze_kernel", "assembly",
    "kernel_signatures", "link_llvm_ir", "llvm_ir", "optimize", "optimized_llvm_ir",
]
