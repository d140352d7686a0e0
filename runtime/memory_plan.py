"""Kept buffers whose lifetimes do not overlap share memory: a program's memory plan.

A program keeps each allocated intermediate between runs (``runtime/program.py``);
kept apart, a network's intermediates add up (MobileNetV2 at 224x224: 26 MB of
activations beside 14 MB of weights, more than the L3 a core shares keeps warm).
Here buffers that are never alive at once share one block of memory, a *slot*,
assigned greedily in step order, best fit first:

    Alloc(1); Launch(k0, (x, 1)); Alloc(2); Launch(k1, (1, 2)); Alloc(3); Launch(k2, (2, 3))
    // buffer 1 is dead after k1: buffer 3 takes its slot
    plan_slots(...) == MemoryPlan(slot_of={1: 0, 2: 1, 3: 0}, sizes=[...])

A call's results may be views of its arguments, so all of them share one
lifetime (conservatively: every result with every argument). A buffer that
shares a lifetime with a program output is never planned: the caller keeps
the output, and with it that memory. Neither are buffers of run-time sizes
(``SizedAlloc``).

At run time (:class:`SlotMemory`) each slot is one byte tensor, and each
planned buffer a view of it made once and kept. Before a buffer is handed out,
the slot's storage must be held by that byte tensor and the kept views alone
(its use count as it was when they were made), and the view, and the one the
slot handed out before it, by the keep alone: otherwise something outside the
program holds it (a cache keyed on a tensor
the program made, a caller's reference to a result that viewed it), and the
slot gets a new block.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from tessera.runtime.layouts import Placement, extent

ALIGN = 64
"""Slot sizes are multiples of a cache line (and of every element size)."""


@dataclass(frozen=True)
class MemoryPlan:
    slot_of: dict[int, int]
    """Planned buffer -> its slot."""
    sizes: tuple[int, ...]
    """Bytes of each slot."""


def nbytes(p: Placement) -> int:
    """The bytes a tensor of placement ``p`` spans."""
    return extent(p.shape, p.strides) * p.dtype.itemsize


def plan_slots(steps: Sequence, inputs: Sequence[int], outputs: Sequence[int]) -> MemoryPlan:
    """The slots of ``steps``'s static allocations (see the module doc)."""
    from tessera.runtime.program import Alloc, Call, defines, reads

    parent: dict[int, int] = {}

    def find(b: int) -> int:
        root = b
        while parent.get(root, root) != root:
            root = parent[root]
        while b != root:  # every buffer on the way now points at the root
            parent[b], b = root, parent[b]
        return root

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    first: dict[int, int] = {b: -1 for b in inputs}
    last: dict[int, int] = {}
    for i, step in enumerate(steps):
        for b in defines(step):
            first.setdefault(b, i)
        for b in (*reads(step), *defines(step)):
            last[b] = i
        if isinstance(step, Call):
            for r in step.results:
                for a in step.args:
                    union(r, a)
    span: dict[int, tuple[int, int]] = {}  # a group's first definition (not its inputs': no slot holds one) and last use
    for b in first:
        root = find(b)
        start = first[b] if first[b] >= 0 else len(steps)
        lo, hi = span.get(root, (start, last.get(b, first[b])))
        span[root] = (min(lo, start), max(hi, last.get(b, first[b])))
    escaping = {find(b) for b in outputs}
    allocs = [s for s in steps if isinstance(s, Alloc) and find(s.buffer) not in escaping]
    slot_of: dict[int, int] = {}
    sizes: list[int] = []
    busy: list[tuple[int, int]] = []  # (last step, slot) of slots in use
    free: list[int] = []
    for step in sorted(allocs, key=lambda s: span[find(s.buffer)][0]):
        lo, hi = span[find(step.buffer)]
        for end, slot in [x for x in busy if x[0] < lo]:
            busy.remove((end, slot))
            free.append(slot)
        need = -(-nbytes(step.placement) // ALIGN) * ALIGN
        fits = [s for s in free if sizes[s] >= need]
        chosen = min(fits, key=lambda s: sizes[s]) if fits else max(free, key=lambda s: sizes[s], default=None)
        if chosen is None:  # every slot is in use: a new one
            slot = len(sizes)
            sizes.append(need)
        else:  # the tightest that fits, else the largest, grown
            slot = chosen
            free.remove(slot)
            sizes[slot] = max(sizes[slot], need)
        slot_of[step.buffer] = slot
        busy.append((hi, slot))
    return MemoryPlan(slot_of, tuple(sizes))


class SlotMemory:
    """The slots of a :class:`MemoryPlan` on ``device``, kept between runs (one run at a time)."""

    def __init__(self, plan: MemoryPlan, placements: dict[int, tuple], device: torch.device):
        self.plan, self.placements, self.device = plan, placements, device
        n = len(plan.sizes)
        self.blocks: list[torch.Tensor | None] = [None] * n
        self.cdata: list[int] = [0] * n
        self.uses: list[int] = [0] * n
        """Each block's storage use count with the slot's kept views alone (as torch counts them)."""
        self.views: dict[int, torch.Tensor] = {}
        self.in_slot: list[list[int]] = [[] for _ in range(n)]
        """The buffers with a kept view of each slot."""
        self.last: list[int | None] = [None] * n
        """The buffer each slot handed out last: only its view can be held since (lifetimes in a slot do not overlap)."""
        self.probe = object()
        """Held the way a kept view is (by this keep, and by the caller's local): the reference count to compare with."""

    def buffer(self, b: int) -> torch.Tensor:
        """Planned buffer ``b``'s tensor for this run: its kept view, unless
        something outside the program holds it, the view the slot last handed
        out (a library that kept the tensor of a buffer before ``b``), or the
        slot's memory."""
        slot = self.plan.slot_of[b]
        t, probe, before = self.views.get(b), self.probe, self.last[slot]
        prev = self.views.get(before) if before is not None and before != b else None
        if (t is not None and sys.getrefcount(t) <= sys.getrefcount(probe)
                and (prev is None or sys.getrefcount(prev) <= sys.getrefcount(probe))
                and torch._C._storage_Use_Count(self.cdata[slot]) <= self.uses[slot]):
            self.last[slot] = b
            return t
        del t, prev
        return self._view(b, slot)

    def _view(self, b: int, slot: int) -> torch.Tensor:
        """A new view for ``b``, on a new block where the slot's is held outside the program."""
        block = self.blocks[slot]
        if block is None or torch._C._storage_Use_Count(self.cdata[slot]) > self.uses[slot] or any(
                sys.getrefcount(self.views[x]) > 2 for x in self.in_slot[slot]):  # the keep, the call
            block = self.blocks[slot] = torch.empty(self.plan.sizes[slot], dtype=torch.uint8, device=self.device)
            self.cdata[slot] = block.untyped_storage()._cdata
            for x in self.in_slot[slot]:
                del self.views[x]
            self.in_slot[slot] = []
        shape, strides, dtype = self.placements[b]
        self.views.pop(b, None)
        t = self.views[b] = block.view(dtype).as_strided(shape, strides)
        if b not in self.in_slot[slot]:
            self.in_slot[slot].append(b)
        self.uses[slot] = torch._C._storage_Use_Count(self.cdata[slot])
        self.last[slot] = b
        return t

    def release(self) -> None:
        """Lets the slots' memory go (a later run takes new blocks)."""
        n = len(self.plan.sizes)
        self.blocks, self.cdata, self.uses, self.last = [None] * n, [0] * n, [0] * n, [None] * n
        self.views.clear()
        self.in_slot = [[] for _ in range(n)]

    def kept_bytes(self) -> int:
        """Bytes the slots hold now."""
        return sum(block.numel() for block in self.blocks if block is not None)
