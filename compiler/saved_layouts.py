"""Saved activations in the layout the forward computes them.

A training forward returns the user's outputs and, after them, the tensors its
backward reads (AOTAutograd's saved activations). Eager's strides matter only
for the first: the saved ones go to the backward alone, which AOTAutograd
compiles for the strides the forward compiler reports (``TracingContext.
output_strides``, as Inductor reports its layout choices). So tessera imports
the forward with its saved outputs marked ``{tsr.free_layout}``; a conv's
channels-last result is then returned as it is, not relayouted to NCHW for the
backward to relayout back:

    forward:  %c = tsr.conv ... -> tensor<8x64x32x32xf32, #tsr.layout<nhwc>>
              func.return ..., %c      // reported strides (65536, 1, 2048, 64)
    backward: %c arrives channels-last; its graph is re-traced for those strides

Graphs of symbolic sizes keep eager's strides: AOTAutograd restrides the
backward's inputs with whole numbers only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch._guards import TracingContext

from tessera.runtime.layouts import OrderPlacement, Placement

from .size_specialization import is_symbolic


def saved_outputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> frozenset[int]:
    """The outputs of forward graph ``gm`` that only its backward reads (none for
    an inference graph, or one of symbolic sizes)."""
    context = TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None or meta.num_symints_saved_for_bw is None or context.output_strides is None:
        return frozenset()
    if any(is_symbolic(x) for x in example_inputs):
        return frozenset()
    outputs = _outputs(gm)
    saved = range(len(outputs))[meta.tensors_saved_for_backwards_slice]
    return frozenset(i for i in saved if isinstance(outputs[i], torch.fx.Node)
                     and isinstance(outputs[i].meta.get("val"), torch.Tensor))


def report_strides(placements: Sequence[Placement | OrderPlacement | None], output_is_none: Sequence[bool],
                   free: frozenset[int]) -> None:
    """Tell AOTAutograd the strides the forward returns its free outputs with
    (``placements``: those of the returned values, the graph outputs that are
    not None); it restrides the backward's inputs to them."""
    context = TracingContext.try_get()
    if context is None or context.output_strides is None:
        return
    returned = iter(placements)
    strides: list[tuple[int, ...] | None] = []
    for i, none in enumerate(output_is_none):
        p = None if none else next(returned, None)
        strides.append(p.strides if i in free and isinstance(p, Placement) else None)
    context.output_strides.extend(strides)


def retrace_for_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Where a backward graph's inputs come with other strides than its
    placeholders were traced with (saved activations the forward returned
    channels-last), make the graph right for them and trace its tensors again:
    every node's ``meta['val']`` then has the strides ATen gives it.

    A ``view`` that needed eager's strides becomes a ``reshape`` (a copy where
    the strides do not allow a view, as Inductor lowers it). A graph that reads
    memory through strides (``as_strided``) gets each such input copied back
    into the strides it was traced with instead."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return
    moved = [(n, x) for n, x in zip(placeholders, example_inputs)
             if isinstance(x, torch.Tensor) and isinstance(n.meta.get("val"), torch.Tensor)
             and x.stride() != n.meta["val"].stride()]
    if not moved:
        return
    from torch._guards import detect_fake_mode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = detect_fake_mode(example_inputs)
    if mode is None:
        return
    if any(n.op == "call_function" and n.target in _READS_STRIDES for n in gm.graph.nodes):
        for n, _ in moved:
            _copied_back(gm.graph, n)
    else:
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target in _VIEWS:
                n.target = torch.ops.aten.reshape.default
    gm.recompile()
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*example_inputs)


_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
"""Views that need strides that allow them; a ``reshape`` copies where they do not."""

_READS_STRIDES = (torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_scatter.default,
                  torch.ops.aten.view.dtype)
"""Ops whose result depends on their input's strides, not only its values."""


def _copied_back(graph: torch.fx.Graph, placeholder: torch.fx.Node) -> None:
    """Make ``placeholder``'s users read a copy of it in the strides it was traced with."""
    val = placeholder.meta["val"]
    users = list(placeholder.users)
    with graph.inserting_after(placeholder):
        empty = graph.call_function(torch.ops.aten.empty_strided.default, (list(val.shape), list(val.stride())),
                                    {"dtype": val.dtype, "device": val.device})
    with graph.inserting_after(empty):
        copy = graph.call_function(torch.ops.aten.copy.default, (empty, placeholder))
    for u in users:
        u.replace_input_with(placeholder, copy)


def _outputs(gm: torch.fx.GraphModule) -> list[Any]:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0]
    return list(out) if isinstance(out, (list, tuple)) else [out]
