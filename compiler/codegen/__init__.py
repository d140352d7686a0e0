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

from tessera.compiler.lazy_exports import lazy_exports

_EXPORTS = {
    "CodegenError": "errors", "UnknownTarget": "errors", "KernelForm": "kernel_form", "analyze_kernel": "kernel_form",
    "kernel_signatures": "kernel_form", "LlvmTarget": "llvm_target", "assembly": "pipeline",
    "link_llvm_ir": "pipeline", "llvm_ir": "pipeline", "optimize": "pipeline", "optimized_llvm_ir": "pipeline",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)  # importing errors or llvm_target alone loads no IR
__all__ = sorted(_EXPORTS)
