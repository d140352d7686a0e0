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

AOTAutograd restrides the backward's inputs with whole numbers only, so a
forward of symbolic sizes notes the dim order of each saved output on its fake
tensor instead, which the backward's compiler gets as its example input
(:func:`backward_inputs`).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch._guards import TracingContext

from tessera.runtime.layouts import OrderPlacement, Placement

from .size_specialization import is_symbolic


def saved_outputs(gm: torch.fx.GraphModule) -> frozenset[int]:
    """The outputs of forward graph ``gm`` that only its backward reads (none for
    an inference graph)."""
    context = TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None or meta.num_symints_saved_for_bw is None or context.output_strides is None:
        return frozenset()
    outputs = _outputs(gm)
    saved = range(len(outputs))[meta.tensors_saved_for_backwards_slice]
    return frozenset(i for i in saved if isinstance(outputs[i], torch.fx.Node)
                     and isinstance(outputs[i].meta.get("val"), torch.Tensor))


def report_layouts(gm: torch.fx.GraphModule, placements: Sequence[Placement | OrderPlacement | None],
                   output_is_none: Sequence[bool], free: frozenset[int]) -> None:
    """Tell the backward the layouts the forward ``gm`` returns its free outputs in
    (``placements``: those of the returned values, the graph outputs that are not
    None). Static ones go to AOTAutograd, which restrides the backward's inputs
    to them; one of symbolic sizes is noted on its fake tensor, which AOTAutograd
    hands the backward's compiler as its example input (:data:`_RETURNED_ORDER`)."""
    context = TracingContext.try_get()
    if context is None or context.output_strides is None:
        return
    outputs = _outputs(gm)
    returned = iter(placements)
    strides: list[tuple[int, ...] | None] = []
    for i, none in enumerate(output_is_none):
        p = None if none else next(returned, None)
        strides.append(p.strides if i in free and isinstance(p, Placement) else None)
        if i in free and isinstance(p, OrderPlacement):
            _note_order(outputs[i].meta["val"], p.order)
    context.output_strides.extend(strides)


_RETURNED_ORDER: dict[int, tuple[int, ...]] = {}
"""The dim order a forward of symbolic sizes returns a saved activation in, by the
``id`` of the fake tensor of its output node (while it lives): AOTAutograd's backward
takes the very same fake tensor as its example input (its placeholders' values are
the forward's outputs')."""


def _note_order(fake: torch.Tensor, order: tuple[int, ...]) -> None:
    key = id(fake)
    if key not in _RETURNED_ORDER:
        weakref.finalize(fake, _RETURNED_ORDER.pop, key, None)
    _RETURNED_ORDER[key] = tuple(order)


def backward_inputs(example_inputs: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """A backward's example inputs as the forward returns them: those of symbolic
    sizes that it returns in another dim order than they were traced in
    (:func:`report_layouts`), restrided to that order (the same fake mode and
    sizes). Only a tensor traced contiguous is restrided; its copy back, where
    the graph reads strides, is then a contiguous clone. The indices moved come second."""
    inputs, moved = list(example_inputs), []
    for i, x in enumerate(example_inputs):
        order = _RETURNED_ORDER.get(id(x)) if isinstance(x, torch.Tensor) else None
        if order is None or tuple(order) == tuple(range(x.dim())) or not _traced_contiguous(x):
            continue
        strides: list[Any] = [1] * x.dim()  # runtime/layouts.dense_strides of symbolic sizes, adding no guard
        for outer, inner in zip(reversed(order[:-1]), reversed(order[1:])):
            strides[outer] = strides[inner] * torch.sym_max(1, x.shape[inner])
        with x.fake_mode:
            inputs[i] = torch.empty_strided(x.shape, strides, dtype=x.dtype, device=x.device)
        moved.append(i)
    return inputs, moved


def _traced_contiguous(x: torch.Tensor) -> bool:
    """Whether ``x``'s strides are the contiguous ones of its sizes, adding no guard."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    expected: Any = 1
    for size, stride in zip(reversed(x.shape), reversed(x.stride())):
        if not known(stride == expected):
            return False
        expected = expected * size
    return True


def retrace_for_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                       moved: Sequence[int] | None = None) -> None:
    """Where a backward graph's inputs come with other strides than its
    placeholders were traced with (saved activations the forward returned
    channels-last: those at ``moved``, or found by comparing static strides),
    make the graph right for them and trace its tensors again: every node's
    ``meta['val']`` then has the strides ATen gives it.

    A ``view`` that needed eager's strides becomes a ``reshape`` (a copy where
    the strides do not allow a view, as Inductor lowers it). A graph that reads
    memory through strides (``as_strided``) gets each such input copied back
    into the strides it was traced with instead."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return
    if moved is None:
        moved = [i for i, (n, x) in enumerate(zip(placeholders, example_inputs))
                 if isinstance(x, torch.Tensor) and isinstance(n.meta.get("val"), torch.Tensor)
                 and not is_symbolic(x) and x.stride() != n.meta["val"].stride()]
    if not moved:
        return
    from torch._guards import detect_fake_mode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = detect_fake_mode(example_inputs)
    if mode is None:
        return
    if any(n.op == "call_function" and n.target in _READS_STRIDES for n in gm.graph.nodes):
        for i in moved:
            _copied_back(gm.graph, placeholders[i])
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
    """Make ``placeholder``'s users read a copy of it in the strides it was traced
    with (of symbolic sizes: traced contiguous, a contiguous clone)."""
    val = placeholder.meta["val"]
    users = list(placeholder.users)
    with graph.inserting_after(placeholder):
        if is_symbolic(val):
            copy = graph.call_function(torch.ops.aten.clone.default, (placeholder,),
                                       {"memory_format": torch.contiguous_format})
        else:
            empty = graph.call_function(torch.ops.aten.empty_strided.default, (list(val.shape), list(val.stride())),
                                        {"dtype": val.dtype, "device": val.device})
            with graph.inserting_after(empty):
                copy = graph.call_function(torch.ops.aten.copy.default, (empty, placeholder))
    for u in users:
        u.replace_input_with(placeholder, copy)


def _outputs(gm: torch.fx.GraphModule) -> list[Any]:
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0]
    return list(out) if isinstance(out, (list, tuple)) else [out]
