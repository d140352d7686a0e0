"""The compilation stages of each target, declared as ordered data and run by
one driver loop (the shape of Triton's ``backends/compiler.py``).

    fx -> graph -> graph-opt -> fused -> kernel -> llvm -> asm|ptx|msl -> obj|cubin|metallib

Every stage's output can be dumped (``compilerctl dump --stage NAME``). The
stages a target does not have yet are an :class:`UnsupportedStage` error
naming the ones it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch.fx
from xdsl.dialects.builtin import ModuleOp

from .context import make_context
from .errors import TesseraError, UnsupportedStage
from .fx_import import import_graph
from .ir_io import print_module, verify_module
from .pass_pipeline import build_pipeline, target_pipeline, without

COMMON_STAGES = ("fx", "graph", "graph-opt", "fused", "kernel", "llvm")
ARTIFACT_STAGES = {"x86": ("asm", "obj"), "ptx": ("ptx", "cubin"), "metal": ("msl", "metallib")}
TARGETS = tuple(ARTIFACT_STAGES)


@dataclass(frozen=True)
class StageOptions:
    """What every stage may look at: the target and, for code generation, its CPU features
    (``None``: this host's)."""

    target: str = "x86"
    features: str | None = None


@dataclass
class StageOutput:
    """What a stage produced: the object later stages take, its text form, and
    the bytes of a binary artifact (``obj``) when there is one."""

    value: Any
    text: str
    suffix: str
    data: bytes | None = None


def _fx(gm: torch.fx.GraphModule, opts: StageOptions) -> StageOutput:
    return StageOutput(gm, gm.print_readable(print_output=False), "py")


def _graph(prev: StageOutput, opts: StageOptions) -> StageOutput:
    result = import_graph(prev.value)
    verify_module(result.module)
    text = print_module(result.module)
    if result.fallbacks:
        kept = "\n".join(f"//   {n} x{c}" for n, c in sorted(result.fallbacks.items()))
        text = f"// ATen ops kept as tsr.aten_call:\n{kept}\n{text}"
    return StageOutput(result.module, text, "mlir")


def _graph_opt(prev: StageOutput, opts: StageOptions) -> StageOutput:
    module = prev.value.clone()
    build_pipeline(target_pipeline(opts.target)).apply(make_context(), module)
    verify_module(module)
    return StageOutput(module, print_module(module), "mlir")


def fuse_kernels(module: ModuleOp, target: str = "x86", disable: tuple[str, ...] = ()) -> ModuleOp:
    """A copy of a graph-optimized module with its fusible groups in ``tsr.fused``
    regions, by ``target``'s fusion pipeline (``disable``: epilogue fusions left
    out, as the backend option)."""
    from tessera.passes import FUSION_PIPELINES

    fused = module.clone()
    build_pipeline(without(FUSION_PIPELINES[target], disable)).apply(make_context(), fused)
    verify_module(fused)
    return fused


def lower_kernels(fused: ModuleOp, target: str):
    """The ``kernel`` stage of a fused module: host graph and kernels, with the
    target's half-precision policy (``passes.HALF_COMPUTE``)."""
    from tessera.passes import HALF_COMPUTE

    from .lowering import lower_to_kernels

    program = lower_to_kernels(fused, half_in_f32=HALF_COMPUTE[target] == "f32-compute",
                               transpose_tile=TRANSPOSE_TILE.get(target))
    if target in THREAD_PER_POINT:
        # GPUs: a pointwise kernel's contiguous loop becomes the innermost grid dim (coalesced)
        from .codegen.nvptx import thread_per_point

        program.kernels = thread_per_point(program.kernels)
    return program


TRANSPOSE_TILE = {"x86": 8}
"""Targets whose relayout reads go through in-register transpose tiles, and
the tile width (``lowering.transpose_tiles``): 8 x 8, one ymm per row on AVX2
and AVX-512 alike; 16 x 16 tiles were 1.1x faster only with warm caches in a
C test of the ResNet block's relayout (BENCHMARKS.md), and not built."""

THREAD_PER_POINT = ("ptx", "metal")
"""Targets that run one thread per grid point (``codegen.nvptx.thread_per_point``)."""


def _fused(prev: StageOutput, opts: StageOptions) -> StageOutput:
    module = fuse_kernels(prev.value, opts.target)
    return StageOutput(module, print_module(module), "mlir")


def _kernel(prev: StageOutput, opts: StageOptions) -> StageOutput:
    program = lower_kernels(prev.value, opts.target)
    return StageOutput(program, program.text(), "mlir")


def _codegen_target(opts: StageOptions):
    from .codegen import get_target

    return get_target(opts.target, features=opts.features)


def _llvm(prev: StageOutput, opts: StageOptions) -> StageOutput:
    """The fused kernels and the kernels tessera generates for library ops (the
    int8 GEMMs) in one optimized module."""
    from .codegen import link_llvm_ir, llvm_ir, optimize
    from .codegen.kernel_form import kernel_functions
    from .codegen.library_kernels import library_kernel_modules

    target = _codegen_target(opts)
    texts = [str(m) for m in library_kernel_modules(prev.value.host, target)]
    if kernel_functions(prev.value.kernels):  # a graph of library ops alone has no fused kernel
        texts.insert(0, llvm_ir(prev.value.kernels, target))
    elif not texts:  # nor, on this target, any generated library kernel: an empty module
        texts = [f'target triple = "{target.triple}"\ntarget datalayout = "{target.data_layout}"\n']
    module = optimize(link_llvm_ir(texts), target)
    return StageOutput((prev.value, target, module), str(module), "ll")


def _asm(prev: StageOutput, opts: StageOptions) -> StageOutput:
    _, target, module = prev.value
    return StageOutput(prev.value, target.emit_assembly(module), "s")


def _obj(prev: StageOutput, opts: StageOptions) -> StageOutput:
    program, target, module = prev.value
    data = target.emit_artifact(module)
    names = ", ".join(f.name for f in module.functions if not f.is_declaration)
    return StageOutput(prev.value, f"// ELF object, {len(data)} bytes; kernels: {names}\n", "o", data)


def _ptx(prev: StageOutput, opts: StageOptions) -> StageOutput:
    _, target, module = prev.value
    return StageOutput(prev.value, target.emit_assembly(module), "ptx")


def _cubin(prev: StageOutput, opts: StageOptions) -> StageOutput:
    from .codegen.ptxas import assemble

    program, target, module = prev.value
    data = assemble(prev.text, target.cpu)
    names = ", ".join(f.name for f in module.functions if not f.is_declaration)
    return StageOutput(prev.value, f"// cubin for {target.cpu}, {len(data)} bytes; kernels: {names}\n", "cubin", data)


def _msl(prev: StageOutput, opts: StageOptions) -> StageOutput:
    from .codegen.msl import print_msl

    module = print_msl(prev.value.kernels)
    return StageOutput((prev.value, module), module.source, "metal")


def _metallib(prev: StageOutput, opts: StageOptions) -> StageOutput:
    from tessera.runtime.cache import CompileCache
    from tessera.runtime.options import RuntimeOptions

    from .codegen.msl.metallib import compile_metallib

    _, module = prev.value
    root = RuntimeOptions().cache_dir
    artifact = compile_metallib(module.source, module.signatures, CompileCache(root) if root else None)
    names = ", ".join(k.name for k in module.kernels)
    text = f"// metallib, {len(artifact.data)} bytes; kernels: {names}\n"
    return StageOutput((artifact, module), text, "metallib", artifact.data)


_COMMON: dict[str, Callable[..., StageOutput]] = {
    "fx": _fx, "graph": _graph, "graph-opt": _graph_opt, "fused": _fused, "kernel": _kernel,
}
# The stages implemented for each target, in order; each takes the previous output.
IMPLEMENTED: dict[str, dict[str, Callable[..., StageOutput]]] = {
    "x86": {**_COMMON, "llvm": _llvm, "asm": _asm, "obj": _obj},
    "ptx": {**_COMMON, "llvm": _llvm, "ptx": _ptx, "cubin": _cubin},  # cubin: needs ptxas
    "metal": {**_COMMON, "msl": _msl, "metallib": _metallib},  # metallib: needs xcrun
}
DEFAULT_STAGE = {"x86": "asm", "ptx": "ptx", "metal": "msl"}
"""What ``compilerctl dump`` prints without ``--stage``: the last text stage."""


NO_LLVM = ("metal",)
"""Targets printed from the kernel IR directly (MSL), without an ``llvm`` stage."""


def stage_names(target: str) -> tuple[str, ...]:
    common = tuple(s for s in COMMON_STAGES if s != "llvm") if target in NO_LLVM else COMMON_STAGES
    return common + ARTIFACT_STAGES[target]


def run_stages(gm: torch.fx.GraphModule, target: str, upto: str | None = None,
               features: str | None = None) -> dict[str, StageOutput]:
    """Run the stages of ``target`` on ``gm`` in order, up to ``upto`` (default: all
    implemented ones); return each stage's output by name."""
    names = stage_names(target)
    if upto is not None and upto not in names:
        raise UnsupportedStage(f"unknown stage '{upto}' for target {target}; stages: {', '.join(names)}")
    stages = IMPLEMENTED[target]
    if upto is not None and upto not in stages:
        raise UnsupportedStage(
            f"stage '{upto}' is not implemented yet for target {target}; "
            f"available: {', '.join(stages)}"
        )
    opts = StageOptions(target, features)
    outputs: dict[str, StageOutput] = {}
    prev: Any = gm
    for name, stage in stages.items():
        try:
            prev = stage(prev, opts)
        except TesseraError as err:
            from .codegen.msl.metallib import ToolchainMissing

            if upto is not None or not isinstance(err, ToolchainMissing):
                raise
            # --all-stages on a host without the stage's toolchain: a note instead of the artifact
            outputs[name] = StageOutput(None, f"// stage '{name}' skipped: {err.message}\n", "skipped.txt")
            break
        outputs[name] = prev
        if name == upto:
            break
    return outputs
