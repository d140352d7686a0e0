"""The stages that LLVM targets share after ``kernel``: ``llvm``, then assembly and an object.

    kernel --llvm_stage-->  one optimized LLVM module: the fused kernels and the
                            kernels the target generates for library ops
           --assembly_stage--> assembly text (x86/AArch64 ``.s``, PTX)
           --object_stage----> the ELF object the CPU runtime loads
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from ..stage_io import CompileOptions, StageOutput
from . import get


def kernels_only(kernels) -> SimpleNamespace:
    """A ``kernel``-stage value with no host graph (``compilerctl translate`` starts from kernels alone)."""
    return SimpleNamespace(host=None, kernels=kernels)


def llvm_stage(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    """The fused kernels and the kernels tessera generates for library ops (the
    int8 GEMMs on x86) in one optimized module."""
    from ..codegen import link_llvm_ir, llvm_ir, optimize
    from ..codegen.kernel_form import kernel_functions

    target = get(opts.target)
    codegen = target.codegen(opts.features)
    program = prev.value
    texts = [str(m) for m in target.library_kernel_modules(program.host, codegen)] if program.host is not None else []
    if kernel_functions(program.kernels):  # a graph of library ops alone has no fused kernel
        texts.insert(0, llvm_ir(program.kernels, codegen))
    elif not texts:  # nor, on this target, any generated library kernel: an empty module
        texts = [f'target triple = "{codegen.triple}"\ntarget datalayout = "{codegen.data_layout}"\n']
    module = optimize(link_llvm_ir(texts), codegen)
    return StageOutput((program, codegen, module), str(module), "ll")


def assembly_stage(suffix: str):
    def assembly(prev: StageOutput, opts: CompileOptions) -> StageOutput:
        _, codegen, module = prev.value
        return StageOutput(prev.value, codegen.emit_assembly(module), suffix)

    return assembly


def object_stage(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    _, codegen, module = prev.value
    data = codegen.emit_artifact(module)
    names = ", ".join(f.name for f in module.functions if not f.is_declaration)
    return StageOutput(prev.value, f"// ELF object, {len(data)} bytes; kernels: {names}\n", "o", data)


@functools.cache
def llvm_has(triple: str) -> bool:
    """Whether this llvmlite was built with the backend of ``triple``."""
    try:
        import llvmlite.binding as llvm

        from ..codegen.llvm_target import init_llvm

        init_llvm()
        llvm.Target.from_triple(triple)
        return True
    except Exception:  # noqa: BLE001 - llvmlite missing, broken or without that backend: report, not crash
        return False
