"""The compilation stages of each target, declared as ordered data and run by
one driver loop (the shape of Triton's ``backends/compiler.py``).

    fx -> graph -> graph-opt -> fused -> kernel -> llvm -> asm|ptx|msl -> obj|cubin|metallib

Every stage's output can be dumped (``compilerctl dump --stage NAME``). The
stages after ``graph-opt`` arrive with code generation; asking for one now is
an :class:`UnsupportedStage` error naming the stages that exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch.fx

from .context import make_context
from .errors import UnsupportedStage
from .fx_import import import_graph
from .ir_io import print_module, verify_module
from .pass_pipeline import build_pipeline, target_pipeline

COMMON_STAGES = ("fx", "graph", "graph-opt", "fused", "kernel", "llvm")
ARTIFACT_STAGES = {"x86": ("asm", "obj"), "ptx": ("ptx", "cubin"), "metal": ("msl", "metallib")}
TARGETS = tuple(ARTIFACT_STAGES)


@dataclass
class StageOutput:
    """What a stage produced: the object later stages take, and its text form."""

    value: Any
    text: str
    suffix: str


def _fx(gm: torch.fx.GraphModule, target: str) -> StageOutput:
    return StageOutput(gm, gm.print_readable(print_output=False), "py")


def _graph(prev: StageOutput, target: str) -> StageOutput:
    result = import_graph(prev.value)
    verify_module(result.module)
    text = print_module(result.module)
    if result.fallbacks:
        kept = "\n".join(f"//   {n} x{c}" for n, c in sorted(result.fallbacks.items()))
        text = f"// ATen ops kept as tsr.aten_call:\n{kept}\n{text}"
    return StageOutput(result.module, text, "mlir")


def _graph_opt(prev: StageOutput, target: str) -> StageOutput:
    module = prev.value.clone()
    build_pipeline(target_pipeline(target)).apply(make_context(), module)
    verify_module(module)
    return StageOutput(module, print_module(module), "mlir")


# The stages implemented so far, in order; each takes the previous output.
IMPLEMENTED: dict[str, Callable[..., StageOutput]] = {"fx": _fx, "graph": _graph, "graph-opt": _graph_opt}


def stage_names(target: str) -> tuple[str, ...]:
    return COMMON_STAGES + ARTIFACT_STAGES[target]


def run_stages(gm: torch.fx.GraphModule, target: str, upto: str | None = None) -> dict[str, StageOutput]:
    """Run the stages of ``target`` on ``gm`` in order, up to ``upto`` (default: all
    implemented ones); return each stage's output by name."""
    names = stage_names(target)
    if upto is not None and upto not in names:
        raise UnsupportedStage(f"unknown stage '{upto}' for target {target}; stages: {', '.join(names)}")
    if upto is not None and upto not in IMPLEMENTED:
        raise UnsupportedStage(
            f"stage '{upto}' is not implemented yet for target {target}; "
            f"available: {', '.join(IMPLEMENTED)}"
        )
    outputs: dict[str, StageOutput] = {}
    prev: Any = gm
    for name, stage in IMPLEMENTED.items():
        prev = stage(prev, target)
        outputs[name] = prev
        if name == upto:
            break
    return outputs
