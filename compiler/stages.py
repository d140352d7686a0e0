"""The driver: a target's stages, declared as ordered data and run by one loop
(the shape of Triton's ``backends/compiler.py``).

    fx -> graph -> graph-opt -> fused -> kernel -> (the target's stages: llvm -> asm -> obj, ...)

The stages up to ``kernel`` are every target's; those after it are the
target's own (``targets/<name>``: ``Target.stages()``). ``compilerctl dump``,
``compilerctl translate`` (from ``kernel`` on) and ``torch.compile`` (through
``kernel``, then the target's artifact) all run this loop, so what ``dump``
shows is what runs. Every stage's output can be dumped (``--stage NAME``).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from . import targets
from .context import make_context
from .errors import TesseraError, UnsupportedStage
from .ir_io import print_module, verify_module
from .pass_pipeline import build_pipeline, without
from .stage_io import CompileOptions, StageOutput
from .targets.base import Stage

COMMON_STAGES = ("fx", "graph", "graph-opt", "fused", "kernel")


def _fx(gm: Any, opts: CompileOptions) -> StageOutput:
    return StageOutput(gm, gm.print_readable(print_output=False), "py")


def _graph(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    from .fx_import import import_graph  # imports torch: only when the driver starts from an FX graph

    result = import_graph(prev.value)
    verify_module(result.module)
    text = print_module(result.module)
    if result.fallbacks:
        kept = "\n".join(f"//   {n} x{c}" for n, c in sorted(result.fallbacks.items()))
        text = f"// ATen ops kept as tsr.aten_call:\n{kept}\n{text}"
    return StageOutput(result.module, text, "mlir")


def _graph_opt(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    module = prev.value.clone()
    pipeline = without(targets.get(opts.target).graph_pipeline(opts.freezing, opts.features), opts.disable)
    build_pipeline(pipeline).apply(make_context(), module)
    verify_module(module)
    return StageOutput(module, print_module(module), "mlir")


def fuse_kernels(module: ModuleOp, options: str | CompileOptions) -> ModuleOp:
    """A copy of a graph-optimized module with its fusible groups in ``tsr.fused``
    regions, by the target's fusion pipeline for the options (a target name: its defaults)."""
    opts = CompileOptions.of(options)
    fused = module.clone()
    pipeline = without(targets.get(opts.target).fusion_pipeline(opts.features, opts.conv_kernels, opts.freezing),
                       opts.disable)
    build_pipeline(pipeline).apply(make_context(), fused)
    verify_module(fused)
    return fused


def lower_kernels(fused: ModuleOp, target: str):
    """The ``kernel`` stage of a fused module: host graph and kernels, with the
    target's half-precision policy and grid mapping."""
    from .lowering import lower_to_kernels

    t = targets.get(target)
    program = lower_to_kernels(fused, half_in_f32=t.half_compute == "f32-compute", transpose_tile=t.transpose_tile,
                               reduce_lanes=t.reduce_lanes, concat_loops=not t.thread_per_point, row_lanes=t.row_lanes,
                               merge_rows=t.merge_rows)
    if t.thread_per_point:
        from .codegen.gpu import thread_per_point

        program.kernels = thread_per_point(program.kernels)
    if t.cooperative_threads:
        from .codegen.gpu_reductions import cooperative_reductions

        program.kernels = cooperative_reductions(program.kernels, t.cooperative_threads)
    return program


def _fused(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    module = fuse_kernels(prev.value, opts)
    return StageOutput(module, print_module(module), "mlir")


def _kernel(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    program = lower_kernels(prev.value, opts.target)
    return StageOutput(program, program.text(), "mlir")


_COMMON: dict[str, Stage] = {"graph": _graph, "graph-opt": _graph_opt, "fused": _fused, "kernel": _kernel}


def stages_of(target: str) -> dict[str, Stage]:
    """Every stage of ``target`` after ``fx``, in order."""
    return {**_COMMON, **targets.get(target).stages()}


def stage_names(target: str) -> tuple[str, ...]:
    return ("fx", *stages_of(target))


def run_stages(start: Any, options: str | CompileOptions, upto: str | None = None,
               start_at: str = "fx") -> dict[str, StageOutput]:
    """Run the stages of the options' target (a target name: with its defaults) in
    order from ``start_at`` (whose value is ``start``: an FX graph for ``fx``, a
    ``kernel``-stage program for ``kernel``) up to ``upto`` (default: all); return
    each stage's output by name.

    On a host without a stage's toolchain (``xcrun``), a run of all stages
    stops there with a note in place of that stage's output."""
    opts = CompileOptions.of(options)
    target = opts.target
    names = stage_names(target)
    for name, what in ((upto, "stage"), (start_at, "start stage")):
        if name is not None and name not in names:
            raise UnsupportedStage(f"unknown {what} '{name}' for target {target}; stages: {', '.join(names)}")
    outputs: dict[str, StageOutput] = {}
    prev = _fx(start, opts) if start_at == "fx" else StageOutput(start, "", "")
    outputs[start_at] = prev
    if upto == start_at:
        return outputs
    stages = list(stages_of(target).items())
    first = next(i for i, (n, _) in enumerate(stages) if n == start_at) + 1 if start_at != "fx" else 0
    for name, stage in stages[first:]:
        try:
            prev = stage(prev, opts)
        except TesseraError as err:
            if upto is not None or not getattr(err, "toolchain_missing", False):
                raise
            outputs[name] = StageOutput(None, f"// stage '{name}' skipped: {err.message}\n", "skipped.txt")
            break
        outputs[name] = prev
        if name == upto:
            break
    return outputs
