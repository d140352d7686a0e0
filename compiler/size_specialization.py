"""An ATen graph with symbolic sizes, compiled once per concrete size class.

Under ``torch.compile(dynamic=True)``, ``mark_dynamic`` or Dynamo's automatic
dynamic shapes, AOTAutograd traces the model once with symbolic sizes and
hands tessera graphs whose inputs have sizes ``s0``, ``s1`` and whose size
arguments are ``SymInt`` inputs (a forward graph of a training step also
returns sizes the backward graph takes):

    def forward(self, w: "f32[8, 3, 3, 3]", s0: "Sym(s0)", x: "f32[2, 3, s0, s0]"):
        convolution = torch.ops.aten.convolution.default(x, w, None, [1, 1], [1, 1], ...)
        return (convolution, s0)

:class:`SizeSpecializedGraph` is what tessera runs for it. On a call it takes
the concrete sizes of the inputs and retraces the graph with them
(``make_fx``: every size expression becomes a number, the ATen ops stay as
they are), then compiles that static graph as any other (``compile_static``:
import, passes, kernels), once per combination of shapes, strides, dtypes
and size arguments; later calls with the same sizes run the compiled program
at static speed. Dynamo's guards and AOTAutograd's one trace serve every size.

    y = SizeSpecializedGraph(gm, compile_static)(w, 16, x)   # compiles for s0 = 16
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.multiprocessing.reductions import StorageWeakRef

from .decompositions import keeping_ops_whole

log = logging.getLogger("tessera")

MAX_SPECIALIZATIONS = 32
"""Size classes kept compiled per graph; past it the least recently used is dropped."""


def is_symbolic(x: Any) -> bool:
    """Whether an example input is a ``SymInt``/``SymFloat`` or has a symbolic size or stride."""
    if isinstance(x, (torch.SymInt, torch.SymFloat)):
        return True
    if isinstance(x, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in (*x.shape, *x.stride(), x.storage_offset()))
    return False


@dataclass(frozen=True)
class View:
    """An output that is a view of input ``input``: its geometry as traced."""

    input: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int


@dataclass(frozen=True)
class Specialized:
    """A graph retraced for one size class: it takes the tensor inputs at
    ``kept`` and returns its tensor outputs; ``constants`` holds the outputs
    that became numbers (sizes) or None, and ``views`` those that are views of
    an input (returned as such, as the static graph's AOTAutograd wrapper
    would), by position."""

    graph: torch.fx.GraphModule
    kept: tuple[int, ...]
    constants: dict[int, Any]
    views: dict[int, View]
    outputs: int


def specialize(gm: torch.fx.GraphModule, args: Sequence[Any]) -> Specialized:
    """``gm`` retraced on ``args``' concrete sizes (fake tensors: nothing runs)."""
    with torch.no_grad(), keeping_ops_whole():
        traced = make_fx(gm, tracing_mode="fake")(*[a.detach() if isinstance(a, torch.Tensor) else a
                                                    for a in args])
    graph = traced.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    kept = []
    for i, (node, a) in enumerate(zip(placeholders, args)):
        if isinstance(a, torch.Tensor):
            kept.append(i)
        elif not node.users:
            graph.erase_node(node)
        else:
            raise TypeError(f"input {i} ({type(a).__name__}) is still used after its size was bound")
    out = next(n for n in graph.nodes if n.op == "output")
    results = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    constants = {i: r for i, r in enumerate(results) if not isinstance(r, torch.fx.Node)}
    views = _views_of_inputs(placeholders, args, results)
    out.args = (tuple(r for r in results if isinstance(r, torch.fx.Node)),)
    graph.eliminate_dead_code()
    graph.lint()
    traced.recompile()
    return Specialized(traced, tuple(kept), constants, views, len(results))


def _views_of_inputs(placeholders: list[torch.fx.Node], args: Sequence[Any], results: Sequence[Any]) -> dict[int, View]:
    """The outputs whose traced value shares its storage with an input's."""
    storages = {StorageWeakRef(n.meta["val"].untyped_storage()): i for i, (n, a) in enumerate(zip(placeholders, args))
                if isinstance(a, torch.Tensor) and isinstance(n.meta.get("val"), torch.Tensor)}
    views = {}
    for k, r in enumerate(results):
        val = r.meta.get("val") if isinstance(r, torch.fx.Node) else None
        if isinstance(val, torch.Tensor) and (i := storages.get(StorageWeakRef(val.untyped_storage()))) is not None:
            views[k] = View(i, tuple(map(int, val.shape)), tuple(map(int, val.stride())), int(val.storage_offset()))
    return views


class SizeSpecializedGraph:
    """A symbolic-size ATen graph, compiled per size class by ``compile_static``
    (``static graph -> callable returning its outputs as a list``)."""

    def __init__(self, gm: torch.fx.GraphModule, compile_static: Callable[[torch.fx.GraphModule], Callable],
                 max_entries: int = MAX_SPECIALIZATIONS, strict: bool = False):
        self.gm = gm
        self.compile_static = compile_static
        self.max_entries = max_entries
        self.strict = strict
        """Raise where a size class cannot be retraced, instead of running the graph as ATen."""
        self.compiled: OrderedDict[tuple, tuple[Callable, Specialized]] = OrderedDict()

    @staticmethod
    def key(args: Sequence[Any]) -> tuple:
        """What a compiled specialization depends on."""
        return tuple((tuple(a.shape), a.stride(), a.storage_offset(), a.dtype, a.device)
                     if isinstance(a, torch.Tensor) else a for a in args)

    def __call__(self, *args: Any) -> list[Any]:
        key = self.key(args)
        entry = self.compiled.get(key)
        if entry is None:
            entry = self._compile(args)
            self.compiled[key] = entry
            if len(self.compiled) > self.max_entries:
                self.compiled.popitem(last=False)
                log.info("tessera: more than %d size classes of one graph; the oldest was dropped", self.max_entries)
        else:
            self.compiled.move_to_end(key)
        run, spec = entry
        tensors = iter(run(*[args[i] for i in spec.kept]))
        outs = [spec.constants[i] if i in spec.constants else next(tensors) for i in range(spec.outputs)]
        for k, v in spec.views.items():
            outs[k] = args[v.input].as_strided(v.size, v.stride, v.offset)
        return outs

    def _compile(self, args: Sequence[Any]) -> tuple[Callable, Specialized]:
        """The compiled program of ``args``' size class; where the graph cannot be
        retraced at those sizes, the graph itself (ATen's ops at those sizes: eager's
        answer), with a warning, unless ``strict``."""
        try:
            spec = specialize(self.gm, args)
        except Exception as e:  # noqa: BLE001 - the symbolic graph still runs as ATen
            if self.strict:
                raise
            log.warning("tessera: a graph could not be specialized to its sizes (%s: %s); it runs as ATen at them",
                        type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            outputs = len(next(n for n in self.gm.graph.nodes if n.op == "output").args[0])
            return (lambda *xs: list(self.gm(*xs))), Specialized(self.gm, tuple(range(len(args))), {}, {}, outputs)
        return self.compile_static(spec.graph), spec
