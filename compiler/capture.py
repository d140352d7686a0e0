"""Capturing the ATen graphs of a model: Dynamo, then AOTAutograd with
tessera's decompositions. ``compilerctl`` uses it to import a model without
running it through a backend; ``torch.compile`` reaches the same path through
:mod:`tessera.compiler.backend`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.fx
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from .decompositions import decomposition_table, keeping_ops_whole


@dataclass
class CapturedGraphs:
    forward: list[torch.fx.GraphModule] = field(default_factory=list)
    backward: list[torch.fx.GraphModule] = field(default_factory=list)


def aot_backend(fw_compiler: Callable, bw_compiler: Callable | None = None, whole: bool = True):
    """A Dynamo backend running AOTAutograd with tessera's decompositions; ``whole``:
    the ops of ``decompositions.KEPT_WHOLE`` kept whole (else ATen's own Python
    decompositions of upsampling apply while tracing)."""
    inner = aot_autograd(
        fw_compiler=fw_compiler,
        bw_compiler=bw_compiler or fw_compiler,
        decompositions=decomposition_table(),
    )

    def backend(gm: torch.fx.GraphModule, example_inputs):
        if not whole:
            return inner(gm, example_inputs)
        with keeping_ops_whole():
            return inner(gm, example_inputs)

    return backend


def capture(fn: Callable, args: Sequence, training: bool = False) -> CapturedGraphs:
    """The ATen graphs Dynamo and AOTAutograd make of ``fn(*args)``.

    With ``training`` the forward graph saves what backward needs and the
    backward graph is captured by a ``.backward()`` through the outputs;
    otherwise the model runs under ``torch.no_grad()`` (the inference graph)."""
    got = CapturedGraphs()

    def keep(into: list):
        def compiler(gm: torch.fx.GraphModule, example_inputs):
            into.append(gm)
            return make_boxed_func(gm.forward)  # AOTAutograd warns about an unboxed one

        return compiler

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=aot_backend(keep(got.forward), keep(got.backward)), fullgraph=False)
    if training:
        out = compiled(*args)
        outs = [o for o in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(o, torch.Tensor) and o.requires_grad]
        if outs:
            torch.autograd.backward([o.sum() for o in outs])
    else:
        with torch.no_grad():
            compiled(*args)
    torch._dynamo.reset()
    return got
