"""A program of run-time sizes bound to one run's sizes: a static program.

A dynamic program (``SizedAlloc`` steps, kernels that take their sizes at run
time) works out its sizes on every call: each allocation's shape from its
inputs, each launch's grid and dims array from its tensors. Called again and
again at one size, it repeats that work. After a checked run, :func:`bind_sizes`
writes the program for the sizes that run saw:

    SizedAlloc(5, layout, (0,))          ->  Alloc(5, Placement(f32, (1, 32, 12, 12), (4608, 1, 384, 32)))
    Launch(k, (0, 5))   # k.dynamic      ->  Launch(k.bind(tensors), (0, 5))   # a BoundKernel: grid 144, dims array filled once
    Call(conv, (0, 3), (4,))             ->  Call(conv.bound_to(args, results, {0}), (0, 3), (4,))
    Call(f, (0, 3), (4,))                ->  Call(Guarded(f, {0: placement}), (0, 3), (4,))

A call that has ``bound_to`` is given the placements of its arguments and
results in that run, and which results to guard (``host_steps.PlacedCall``: its
results' placements become static, and a library conv settles what it decided
per size); any other is wrapped in :class:`Guarded` where a bound size came from it.

Its allocations are static, so its buffers share memory by the memory plan
(``memory_plan.py``), and its straight-line function (``runner.py``) launches
each kernel with constant arguments, as a static program's does.

What the binding assumed is checked where it cannot be foreseen: a call whose
result a bound size came from raises :class:`SizesChanged` if the result is
placed otherwise (a size that depends on the data), and so does a bound kernel
(``runtime.kernel.BoundKernel``) launched with a check on tensors of other sizes. The dynamic program then runs
the call itself (``Program.run``); the program is a function of its inputs, so
running it again from the start is safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tessera.runtime.errors import SizesChanged
from tessera.runtime.layouts import Placement


def placement_or_none(t: Any) -> Placement | None:
    """A call result's placement (None: not a tensor)."""
    return Placement.of(t) if isinstance(t, torch.Tensor) else None


class Guarded:
    """A call whose results (by position) the binding read sizes from: each must
    come back placed as it was then, else :class:`SizesChanged`."""

    def __init__(self, fn: Callable, placements: dict[int, Placement]):
        self.fn, self.placements = fn, placements
        self.__name__ = getattr(fn, "__name__", "call")

    def __call__(self, *args: Any) -> Any:
        out = self.fn(*args)
        outs = [out] if isinstance(out, torch.Tensor) else out
        for i, p in self.placements.items():
            t = outs[i]
            if t.shape != p.shape or t.stride() != p.strides:
                self.changed(i, t)
        return out

    def changed(self, i: int, t: torch.Tensor) -> None:
        """Result ``i``, ``t``, is not placed as bound (the straight-line runner checks inline)."""
        raise SizesChanged(f"{self.__name__} returned {tuple(t.shape)}, bound to {self.placements[i].shape}")


def of_sizes(step: Any) -> bool:
    """A call whose results follow from its arguments' sizes alone (``tsr.dim``, size
    arithmetic: ``PlacedCall.of_sizes``)."""
    return getattr(getattr(step, "fn", None), "of_sizes", False)


class SizeConstant:
    """A size call's results in a program bound to one run's sizes: what it returned then
    (the runner writes ints as literals)."""

    of_sizes = True

    def __init__(self, values: Sequence[Any]):
        self.values = tuple(values)
        self.__name__ = "size"

    def __call__(self) -> tuple:
        return self.values


def bind_sizes(program: Any, seen: dict[int, Any]) -> Any:
    """``program`` (a dynamic ``Program``) at the sizes of one run. ``seen`` holds, by
    step: a ``SizedAlloc``'s placement, a launch's bound launchable, a call's argument
    and result placements (None: not a tensor) and, of a size call, its results. A
    size call becomes their constant (what it read sizes from is guarded, and a
    constant nothing reads is dropped), also one whose ints the program returns (a
    training forward's sizes for its backward). See the module doc."""
    from tessera.runtime.program import Alloc, Call, Launch, Program, SizedAlloc

    outputs = set(program.outputs)
    folded = {i for i, step in enumerate(program.steps)  # a returned 0-d tensor stays a call: a fresh one each run
              if isinstance(step, Call) and of_sizes(step)
              and (not outputs.intersection(step.results) or all(type(v) is int for v in seen[i][2]))}
    sized_by = {b for i, step in enumerate(program.steps)
                if isinstance(step, (Launch, SizedAlloc)) or i in folded for b in step.args}
    steps = []
    for i, step in enumerate(program.steps):
        if i in folded:
            step = Call(SizeConstant(seen[i][2]), (), step.results)
        elif isinstance(step, SizedAlloc):
            step = Alloc(step.buffer, seen[i])
        elif isinstance(step, Launch):
            step = Launch(seen[i], step.args)
        elif isinstance(step, Call):
            args, results, _ = seen[i]
            guards = {j: p for j, (b, p) in enumerate(zip(step.results, results)) if b in sized_by and p is not None}
            bound_to = getattr(step.fn, "bound_to", None)
            if bound_to is not None:
                step = Call(bound_to(args, results, set(guards)), step.args, step.results)
            elif guards:
                step = Call(Guarded(step.fn, guards), step.args, step.results)
        steps.append(step)
    return Program(_unread_constants_dropped(steps, outputs), program.inputs, program.outputs, program.device,
                   program.reuse_buffers, program.straight_line)


def _unread_constants_dropped(steps: list, outputs: set[int]) -> list:
    """``steps`` without the size constants whose results no later step reads."""
    from tessera.runtime.program import Call, reads

    read = set(outputs)
    kept = []
    for step in reversed(steps):
        if isinstance(step, Call) and isinstance(step.fn, SizeConstant) and read.isdisjoint(step.results):
            continue
        read.update(reads(step))
        kept.append(step)
    return kept[::-1]


def bound_launchable(launchable: Any, tensors: Sequence[torch.Tensor]) -> Any:
    """What launches ``tensors`` at their sizes: ``launchable.bind(tensors)`` where
    it has one (a kernel of run-time sizes, a conv with a kernel per size), else itself."""
    binder = getattr(launchable, "bind", None)
    return launchable if binder is None else binder(tensors)
