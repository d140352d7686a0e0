"""A compiled graph: buffer allocations, kernel launches and ATen calls, in order.

    prog = Program(
        steps=[Alloc(2, placement),              # buffer 2: a Placement (dtype, shape, strides)
               Launch(kernel, (0, 2)),           # kernel(x=buf0, out=buf2)
               Call(torch.relu, (2,), (3,))],    # buf3 = relu(buf2)
        inputs=(0,), outputs=(3,))
    (y,) = prog.run(x)

Buffers are integer ids. Each intermediate buffer is dropped from the run
right after its last use. An allocated intermediate (not an output) is kept
for the next run and written again there when nothing else holds it: large
buffers then keep their pages instead of being mapped and faulted in again on
every call (the allocator returns big blocks to the OS); a ``SizedAlloc`` (sizes
known at run time) keeps its tensor while the sizes repeat. Kept buffers that
are never alive at once share memory (``runtime/memory_plan.py``). ``reuse_buffers=False``
allocates every buffer anew, so memory between calls holds only the outputs.

A run whose launches need no check and whose buffers are kept (the steady
state) runs the steps written out as one Python function
(``runtime/runner.py``), made on the first such run; every other run is
interpreted here (``straight_line=False``: always). A program of run-time
sizes is bound to the sizes of each checked run (``runtime/size_binding.py``):
the last :data:`BOUND_SIZES` sizes run as static programs of their own.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from tessera.runtime.errors import ProgramError, SizesChanged
from tessera.runtime.kernel import Launchable, placements_of
from tessera.runtime.layouts import Placement
from tessera.runtime.memory_plan import SlotMemory, plan_slots
from tessera.runtime.size_binding import bind_sizes, bound_launchable, of_sizes, placement_or_none


@dataclass(frozen=True)
class Alloc:
    buffer: int
    placement: Placement


@dataclass(frozen=True)
class SizedAlloc:
    """An allocation whose sizes come from tensors of the run (a kernel's output of
    dynamic sizes): ``layout(*args)`` gives its shape, strides and dtype."""

    buffer: int
    layout: Callable[..., tuple[tuple[int, ...], tuple[int, ...], torch.dtype]]
    args: tuple[int, ...]


@dataclass(frozen=True)
class Launch:
    kernel: Launchable
    args: tuple[int, ...]


@dataclass(frozen=True)
class Call:
    """``results = fn(*args)``; ``fn`` returns one tensor or a sequence of them."""

    fn: Callable[..., torch.Tensor | Sequence[torch.Tensor]]
    args: tuple[int, ...]
    results: tuple[int, ...]


Step = Alloc | SizedAlloc | Launch | Call


def _placement(p: Placement) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
    return p.shape, p.strides, p.dtype


def reads(step: Step) -> tuple[int, ...]:
    """The buffers ``step`` reads (a launch: its outputs too, which an allocation defined)."""
    return () if isinstance(step, Alloc) else step.args


def defines(step: Step) -> tuple[int, ...]:
    """The buffers ``step`` defines."""
    if isinstance(step, (Alloc, SizedAlloc)):
        return (step.buffer,)
    return step.results if isinstance(step, Call) else ()


BOUND_SIZES = 4
"""Sizes a program of run-time sizes keeps a bound (static) program for, the most recent."""

_PROBE = -1
"""The key of the object that :func:`_only_ours` compares reference counts with."""


def _only_ours(t: torch.Tensor, probe: object) -> bool:
    """Nothing but the program's keep holds ``t`` or a view of its memory: ``t``
    has no more references than ``probe``, an object held the same way (by a
    keep, a caller's local and this call; counting the same way keeps this
    true under a frame-evaluation hook that adds references), and its storage
    is held by the tensor and the temporary wrapper made here alone."""
    return (sys.getrefcount(t) <= sys.getrefcount(probe)
            and torch._C._storage_Use_Count(t.untyped_storage()._cdata) <= 2)


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    reuse_buffers: bool = True
    straight_line: bool = True
    _free_after: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    _alloc: dict[int, tuple] = field(init=False, repr=False, compare=False)
    _checked: list = field(init=False, repr=False, compare=False)
    _outputs: frozenset[int] = field(init=False, repr=False, compare=False)
    _launched: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _kept: dict[int, torch.Tensor] = field(init=False, repr=False, compare=False)
    _running: threading.Lock = field(init=False, repr=False, compare=False)
    _runner: list = field(init=False, repr=False, compare=False)
    _memory: SlotMemory | None = field(init=False, repr=False, compare=False)
    _bound: OrderedDict | None = field(init=False, repr=False, compare=False)
    _unbound: set = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        defined = set(self.inputs)
        if len(defined) != len(self.inputs):
            raise ProgramError("program inputs repeat a buffer id")
        last_use: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            if not isinstance(step, (Alloc, SizedAlloc, Launch, Call)):
                raise ProgramError(f"step {i}: {type(step).__name__} is not an Alloc, SizedAlloc, Launch or Call")
            for b in reads(step):
                if b not in defined:
                    raise ProgramError(f"step {i} ({type(step).__name__}) uses buffer {b} before it is defined")
                last_use[b] = i
            for b in defines(step):
                if b in defined:
                    raise ProgramError(f"step {i} ({type(step).__name__}) redefines buffer {b}")
                defined.add(b)
                last_use.setdefault(b, i)
        missing = [b for b in self.outputs if b not in defined]
        if missing:
            raise ProgramError(f"program outputs {missing} are never defined")
        keep = set(self.outputs)
        free: list[list[int]] = [[] for _ in self.steps]
        for b, i in last_use.items():
            if b not in keep:
                free[i].append(b)
        object.__setattr__(self, "_free_after", tuple(tuple(f) for f in free))
        object.__setattr__(self, "_alloc", {s.buffer: _placement(s.placement) for s in self.steps if isinstance(s, Alloc)})
        object.__setattr__(self, "_checked", [None])  # the inputs of the last run whose launches were checked
        object.__setattr__(self, "_outputs", frozenset(self.outputs))
        launched = {b for step in self.steps if isinstance(step, (Launch, SizedAlloc)) or of_sizes(step)
                    for b in reads(step)}
        # positions of the inputs a kernel reads, an allocation is sized by or sizes are read from:
        # the only buffers whose placement a run cannot foresee
        object.__setattr__(self, "_launched", tuple(i for i, b in enumerate(self.inputs) if b in launched))
        object.__setattr__(self, "_kept", {_PROBE: object()})  # intermediate buffer id -> its tensor of the last run
        object.__setattr__(self, "_running", threading.Lock())  # a run keeping buffers is under way
        object.__setattr__(self, "_runner", [None, None])  # straight-line functions: plain, timed
        plan = plan_slots(self.steps, self.inputs, self.outputs) if self.reuse_buffers else None
        object.__setattr__(self, "_memory", SlotMemory(plan, self._alloc, self.device) if plan and plan.slot_of else None)
        sizes_vary = any(isinstance(s, SizedAlloc) or (isinstance(s, Launch) and getattr(s.kernel, "dynamic", False))
                         for s in self.steps)
        binds = sizes_vary and self.reuse_buffers and self.straight_line
        object.__setattr__(self, "_bound", OrderedDict() if binds else None)  # launched placements -> bound program
        object.__setattr__(self, "_unbound", set())  # launched placements whose binding met other sizes

    def __reduce__(self) -> tuple:
        """Pickled as what it was made of (the graph cache stores programs): no kept buffers."""
        return Program, (self.steps, self.inputs, self.outputs, self.device, self.reuse_buffers, self.straight_line)

    def run(self, *tensors: torch.Tensor, on_step: Callable[[Step, float], None] | None = None) -> list[torch.Tensor]:
        """The outputs for ``tensors``; ``on_step(step, seconds)`` after each step
        when given (``bench/step_profile.py``).

        Kernel launches check their tensors (:meth:`Kernel.check`) on the first run
        and whenever the dtypes, shapes, strides or devices of the inputs kernels
        read differ from the last checked run; otherwise every buffer is as it was
        then (allocations and library results are placed by their types), and
        launches skip the check; such a run with kept buffers runs the
        straight-line function (``runtime/runner.py``). A program of run-time sizes
        runs the program bound to these placements, binding one on a run that
        has none (``runtime/size_binding.py``)."""
        if len(tensors) != len(self.inputs):
            raise ProgramError(f"program takes {len(self.inputs)} inputs, got {len(tensors)}")
        return self._placed_run(tensors, placements_of([tensors[i] for i in self._launched]), on_step)

    def _placed_run(self, tensors, seen: tuple, on_step) -> list[torch.Tensor]:
        """:meth:`run` with ``seen``, the placements of the inputs kernels read (the
        key of a bound program, which its own run takes as it is)."""
        trusted = seen == self._checked[0]
        keep = self.reuse_buffers and self._running.acquire(blocking=False)  # one run at a time keeps buffers
        try:
            if keep and self._bound is not None:
                bound = self._bound.get(seen)
                if bound is not None:
                    self._bound.move_to_end(seen)
                    try:
                        return bound._placed_run(tensors, seen, on_step)
                    except SizesChanged:  # a size that depends on more than these placements: run it unbound
                        del self._bound[seen]
                        if len(self._unbound) >= 64:
                            self._unbound.clear()
                        self._unbound.add(seen)
                elif seen not in self._unbound:
                    return self._run(tensors, seen, trusted, keep, on_step, bind=True)
            if trusted and keep and self.straight_line:
                if on_step is None:
                    return self._straight_line(False)(*tensors)
                return self._straight_line(True)(*tensors, on_step)
            return self._run(tensors, seen, trusted, keep, on_step)
        finally:
            if keep:
                self._running.release()

    def _straight_line(self, timed: bool) -> Callable[..., list[torch.Tensor]]:
        """The steps as one function (``runtime/runner.py``), made on first use; ``timed``: calling ``on_step``."""
        run = self._runner[timed]
        if run is None:
            from tessera.runtime.runner import straight_line

            run = self._runner[timed] = straight_line(self, timed)
        return run

    def _buffer(self, b: int, keep: bool) -> torch.Tensor:
        """A tensor for allocated buffer ``b``: its memory-plan slot's (``memory_plan``),
        or last run's, when it is kept and no one else holds it."""
        keep = keep and b not in self._outputs
        if keep and self._memory is not None and b in self._memory.plan.slot_of:
            return self._memory.buffer(b)
        if keep:
            t, probe = self._kept.get(b), self._kept[_PROBE]
            if t is not None and _only_ours(t, probe):
                return t
        return self._new_buffer(b, keep, self._alloc[b])

    def _sized_buffer(self, step: SizedAlloc, keep: bool, env: dict[int, torch.Tensor]) -> torch.Tensor:
        """A tensor for ``step``'s buffer at this run's sizes: last run's, when it is
        kept, of these sizes, and no one else holds it."""
        layout = step.layout(*(env[a] for a in step.args))
        keep = keep and step.buffer not in self._outputs
        if keep:
            t, probe = self._kept.get(step.buffer), self._kept[_PROBE]
            if t is not None and (t.shape, t.stride(), t.dtype) == layout and _only_ours(t, probe):
                return t
        return self._new_buffer(step.buffer, keep, layout)

    def _new_buffer(self, b: int, keep: bool, layout: tuple) -> torch.Tensor:
        shape, strides, dtype = layout
        t = torch.empty_strided(shape, strides, dtype=dtype, device=self.device)
        if keep:
            self._kept[b] = t
        return t

    def _run(self, tensors, seen, trusted: bool, keep: bool, on_step, bind: bool = False) -> list[torch.Tensor]:
        env: dict[int, torch.Tensor] = dict(zip(self.inputs, tensors))
        sizes: dict[int, object] = {}  # bind: what size_binding.bind reads, by step
        for i, (step, free) in enumerate(zip(self.steps, self._free_after)):
            if on_step is not None:
                start = time.perf_counter()
            if isinstance(step, Alloc):
                env[step.buffer] = self._buffer(step.buffer, keep)
            elif isinstance(step, SizedAlloc):
                env[step.buffer] = self._sized_buffer(step, keep, env)
                if bind:
                    sizes[i] = Placement.of(env[step.buffer])
            elif isinstance(step, Launch):
                if trusted:
                    step.kernel.launch_trusted([env[b] for b in step.args])
                else:
                    step.kernel(*(env[b] for b in step.args))
                if bind:
                    sizes[i] = bound_launchable(step.kernel, [env[b] for b in step.args])
            else:
                if bind:
                    arg_placements = [placement_or_none(env[b]) for b in step.args]
                out = step.fn(*(env[b] for b in step.args))
                outs = [out] if isinstance(out, torch.Tensor) else list(out)
                if len(outs) != len(step.results):
                    raise ProgramError(f"call of {getattr(step.fn, '__name__', step.fn)} returned {len(outs)} tensors, expected {len(step.results)}")
                env.update(zip(step.results, outs))
                if bind:
                    sizes[i] = (arg_placements, [placement_or_none(t) for t in outs], outs if of_sizes(step) else None)
            for b in free:
                env.pop(b, None)
            if on_step is not None:
                on_step(step, time.perf_counter() - start)
        if not trusted:
            self._checked[0] = seen
        if bind:
            self._keep_bound(seen, bind_sizes(self, sizes))
        return [env[b] for b in self.outputs]

    def _keep_bound(self, seen: tuple, bound: Program) -> None:
        """Keeps ``bound`` for runs with inputs placed as ``seen`` (checked in this run),
        the most recent :data:`BOUND_SIZES`; the buffers this program kept go (each
        bound program keeps its own)."""
        kept = self._bound
        if kept is None:
            return
        bound._checked[0] = seen
        kept[seen] = bound
        while len(kept) > BOUND_SIZES:
            kept.popitem(last=False)
        probe = self._kept[_PROBE]
        self._kept.clear()
        self._kept[_PROBE] = probe
        if self._memory is not None:
            self._memory.release()
