"""The ``torch.compile`` backend: ``torch.compile(model, backend="tessera")``.

Dynamo's graph goes through AOTAutograd with tessera's decompositions; each
ATen graph (forward, backward) is imported into ``tsr``, verified, run through
the target's graph pipeline and executed as a :class:`GraphProgram`. Until
code generation lands, a program runs its ops through the reference
interpreter. A graph that cannot be imported runs as ATen, as captured, with a
warning: the user's program never fails because of tessera.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from functorch.compile import make_boxed_func
from xdsl.dialects.builtin import ModuleOp

from tessera.passes import PIPELINES

from .capture import aot_backend
from .context import make_context
from .fx_import import import_graph
from .interpreter import Interpreter
from .ir_io import print_module, verify_module
from .pass_pipeline import build_pipeline

log = logging.getLogger("tessera")


@dataclass(frozen=True)
class BackendOptions:
    """Options of ``torch.compile(..., backend="tessera", options={...})``."""

    target: str = "x86"
    print_ir: bool = False
    """Print each graph's ``tsr`` IR after the graph passes."""

    def __post_init__(self) -> None:
        if self.target not in PIPELINES:
            raise ValueError(f"tessera: unknown target '{self.target}', expected one of {sorted(PIPELINES)}")

    @classmethod
    def from_dict(cls, options: dict[str, Any] | None) -> "BackendOptions":
        options = dict(options or {})
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"tessera: unknown options {unknown}, expected some of {sorted(known)}")
        return cls(**options)


class GraphProgram:
    """A compiled ATen graph: call it with the graph's inputs."""

    def __init__(self, module: ModuleOp, output_is_none: list[bool]):
        self.module = module
        self.output_is_none = output_is_none
        self._interpreter = Interpreter(module)

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor | None]:
        values = iter(self._interpreter.run(*inputs))
        return [None if none else next(values) for none in self.output_is_none]


def compile_graph(gm: torch.fx.GraphModule, options: BackendOptions, kind: str) -> Callable:
    """Import and prepare one ATen graph; fall back to ATen if tessera cannot."""
    try:
        result = import_graph(gm)
        verify_module(result.module)
        build_pipeline(PIPELINES[options.target]).apply(make_context(), result.module)
        verify_module(result.module)
    except Exception as e:  # noqa: BLE001 - any failure here must not reach the user's program
        log.warning("tessera: %s graph runs as ATen (not compiled): %s", kind, e)
        return make_boxed_func(gm.forward)
    if result.fallbacks:
        kept = ", ".join(f"{n} x{c}" for n, c in sorted(result.fallbacks.items()))
        log.info("tessera: %s graph keeps ATen calls: %s", kind, kept)
    if options.print_ir:
        print(f"// tessera: {kind} graph\n{print_module(result.module)}")
    return make_boxed_func(GraphProgram(result.module, result.output_is_none))


def tessera_backend(gm: torch.fx.GraphModule, example_inputs, options: dict[str, Any] | None = None):
    """The Dynamo backend registered as ``tessera``."""
    opts = BackendOptions.from_dict(options)
    return aot_backend(
        lambda g, _: compile_graph(g, opts, "forward"),
        lambda g, _: compile_graph(g, opts, "backward"),
    )(gm, example_inputs)
