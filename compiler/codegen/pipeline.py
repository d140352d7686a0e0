"""From a kernels module to optimized LLVM IR, assembly and an artifact.

    kernels (builtin.module of tsr.kernel funcs)
      --emit_module-->  LLVM IR text            (stage ``llvm``)
      --optimize----->  verified, O3 for the target's TargetMachine
      --target------->  assembly text / object bytes (``targets/llvm_stages.py``)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import llvmlite.binding as llvm

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.llvm_target import LlvmTarget, init_llvm

if TYPE_CHECKING:  # optimize() serves the kernels written straight in LLVM IR, which need no IR of ours
    from xdsl.dialects.builtin import ModuleOp


def llvm_ir(kernels: ModuleOp, target: LlvmTarget) -> str:
    """Unoptimized LLVM IR text of every kernel."""
    from tessera.compiler.codegen.llvm_emitter import emit_module

    return str(emit_module(kernels, target))


def link_llvm_ir(texts: Sequence[str]) -> str:
    """One module of several LLVM IR modules' texts (what ``llvm-link`` does);
    a single text is returned as it is."""
    if len(texts) == 1:
        return texts[0]
    init_llvm()
    try:
        linked = llvm.parse_assembly(texts[0])
        for text in texts[1:]:
            linked.link_in(llvm.parse_assembly(text))
    except RuntimeError as err:
        raise CodegenError(f"linking the emitted LLVM modules failed: {err}") from None
    return str(linked)


def optimize(ir_text: str, target: LlvmTarget, level: int = 3) -> llvm.ModuleRef:
    """Parses and verifies ``ir_text``, then runs LLVM's default ``O<level>``
    pipeline (loop and SLP vectorizers on) with the target's cost model."""
    init_llvm()
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as err:
        raise CodegenError(f"emitted LLVM IR does not verify: {err}") from None
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(target.target_machine, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def optimized_llvm_ir(kernels: ModuleOp, target: LlvmTarget) -> str:
    return str(optimize(llvm_ir(kernels, target), target))


def assembly(kernels: ModuleOp, target: LlvmTarget) -> str:
    return target.emit_assembly(optimize(llvm_ir(kernels, target), target))
