"""Code generation: kernel IR (docs/kernel-ir.md) to LLVM IR and machine code.

    from tessera.compiler.codegen import get_target, llvm_ir, assembly, build_artifact
    target = get_target("x86", features="+avx512f")
    print(assembly(kernels_module, target))          # zmm everywhere the loops allow

One emitter (``llvm_emitter``) with per-target knobs (``target.Target``):
``x86`` (objects) and ``ptx`` (``nvptx.NVPTXTarget``: PTX text; ``ptxas`` makes cubins).
"""

from __future__ import annotations

from tessera.compiler.codegen.errors import CodegenError, UnknownTarget
from tessera.compiler.codegen.kernel_form import KernelForm, analyze_kernel, kernel_signatures
from tessera.compiler.codegen.nvptx import NVPTXTarget
from tessera.compiler.codegen.pipeline import assembly, build_artifact, link_llvm_ir, llvm_ir, optimize, optimized_llvm_ir
from tessera.compiler.codegen.target import Target
from tessera.compiler.codegen.x86 import X86Target

TARGETS: dict[str, type[Target]] = {"x86": X86Target, "ptx": NVPTXTarget}


def get_target(name: str = "x86", features: str | None = None, cpu: str | None = None) -> Target:
    """A target by name; ``features=None`` means this host's CPU."""
    cls = TARGETS.get(name)
    if cls is None:
        raise UnknownTarget(f"unknown target {name!r}; known: {', '.join(sorted(TARGETS))}")
    return cls(features=features, cpu=cpu)


__all__ = [
    "CodegenError", "KernelForm", "NVPTXTarget", "Target", "UnknownTarget", "X86Target", "analyze_kernel", "assembly",
    "build_artifact", "get_target", "link_llvm_ir", "kernel_signatures", "llvm_ir", "optimize", "optimized_llvm_ir",
]
