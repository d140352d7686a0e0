"""A program's steps written out as one Python function, straight-line.

``Program.run`` interprets its steps: a dispatch on each step's kind, buffers in
a dict, a launch through the kernel's layers, a few microseconds a step that a
graph of hundreds of small kernels pays on every call. :func:`straight_line`
writes the steps out once as Python source, buffers as locals, each launch a
call of the machine code itself, and compiles it:

    def run(b0):
        t = kept.get(2)                                    # Alloc 2, kept between runs
        if t is None or rc(t) > rc(probe) or use(t.untyped_storage()._cdata) > 2:
            t = kept[2] = new(S0, T1, dtype=D2, device=device)
        b2 = t
        K3(b0.data_ptr(), b2.data_ptr(), 0, 512)          # Launch: one chunk of the grid
        del b0
        b4 = one(F4(b2), F4)                               # Call
        del b2
        return [b4]

A planned buffer whose slot only kernel launches touch is a constant of the
function, its view and its address (:func:`pinned_views`): no check of the slot
on each run, no ``data_ptr()`` call (MobileNetV3-small: ~90 such buffers, 2-6% of
a call). The launches between two steps that must run in Python (a call, an
allocation that is not planned, a launch of several kernels or of run-time
sizes) are one *segment*: a native function calling each kernel in turn (a
threaded one through its OpenMP trampoline) with its addresses
(``runtime/native.py``), the pinned ones constants of its code, the others
written into its pointer array by each launch where it stands:

    def run(b0, b1):
        A5[0] = b0.data_ptr()                              # Launch 1 (its output pinned)
        A5[1] = b1.data_ptr()
        b3 = M2(3)                                         # Alloc 3: a view of a planned slot
        A5[2] = b3.data_ptr()                              # Launch 2
        N6()                                               # both launches, in order
        del b0
        b4 = one(F7(b3), F7)                               # Call
        ...

so Python makes one call where it made one per kernel (MobileNetV3-small: 91
launches in 3 calls). It runs what the interpreter runs for a call whose launches are trusted (the
inputs the kernels read are placed as in the last checked run) and whose
buffers are kept (``Program.reuse_buffers``, one run at a time): the same
allocations, reuse decisions, launches and frees, in the same order. The
interpreter stays the reference; it also runs every other call.
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from tessera.runtime import openmp
from tessera.runtime.errors import LoadError, ProgramError
from tessera.runtime.kernel import BoundKernel, Kernel
from tessera.runtime.layouts import SizedLayout, dense_strides
from tessera.runtime.native import Argument, KernelCall, Pointer, Segments, address_of
from tessera.runtime.size_binding import Guarded, SizeConstant

if TYPE_CHECKING:
    from tessera.runtime.openmp import Trampolines
    from tessera.runtime.program import Alloc, Call, Launch, Program, SizedAlloc

Runner = Callable[..., list]


def straight_line(program: Program, timed: bool = False, native: bool = True) -> Runner:
    """The steps of ``program`` as one compiled function of its inputs (see the
    module doc); ``timed``: a function of its inputs and ``on_step``, called as
    ``on_step(step, seconds)`` after each step, as ``Program.run`` does
    (``bench/step_profile.py``), each launch on its own; ``native=False``: each
    launch a call of its kernel, no segments."""
    return _Writer(program, timed, native).function()


def one(out: Any, fn: Callable) -> Any:
    """A ``Call``'s one result: ``out`` itself when it is a tensor, else its only item."""
    if isinstance(out, torch.Tensor):
        return out
    return many(out, 1, fn)[0]


def many(out: Any, n: int, fn: Callable) -> list:
    """A ``Call``'s ``n`` results, as the interpreter checks them."""
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    if len(outs) != n:
        raise ProgramError(f"call of {getattr(fn, '__name__', fn)} returned {len(outs)} tensors, expected {n}")
    return outs


class _Writer:
    """Writes one program's function; ``names`` holds what its source refers to."""

    def __init__(self, program: Program, timed: bool, native: bool = True):
        self.program, self.timed = program, timed
        self.names: dict[str, Any] = {
            "kept": program._kept, "rc": sys.getrefcount, "use": torch._C._storage_Use_Count,
            "new": torch.empty_strided, "device": program.device, "one": one, "many": many,
            "dense": dense_strides, "clock": time.perf_counter,
        }
        self.lines: list[str] = []
        self.sizes: dict[tuple[int, str], str] = {}  # (buffer, "shape" | "stride") -> the local holding it
        self.pinned = pinned_views(program)
        """Planned buffers whose view is a constant of the function (:func:`pinned_views`)."""
        self.segment = _Segment(self) if native and not timed else None
        """The launches not yet written, where they run as native segments (:class:`_Segment`)."""

    def name(self, prefix: str, value: Any) -> str:
        """A name in the function's globals for ``value``."""
        key = f"{prefix}{len(self.names)}"
        self.names[key] = value
        return key

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    def sizes_of(self, b: int, kind: str) -> str:
        """A local holding buffer ``b``'s ``shape`` or ``stride()``, read once: a
        tensor's sizes never change, and reading them from torch costs ~0.1 us each."""
        local = self.sizes.get((b, kind))
        if local is None:
            local = self.sizes[(b, kind)] = f"{'sh' if kind == 'shape' else 'st'}{b}"
            self.emit(f"{local} = {_b(b)}.{'shape' if kind == 'shape' else 'stride()'}")
        return local

    def function(self) -> Runner:
        from tessera.runtime.program import _PROBE, Alloc, Call, Launch, SizedAlloc

        p = self.program
        params = [_b(b) for b in p.inputs] + (["on_step"] if self.timed else [])
        self.lines.append(f"def run({', '.join(params)}):")
        self.emit(f"probe = kept[{_PROBE}]")  # held as each kept buffer is: the dict, a local (runtime.program._only_ours)
        for i, (step, free) in enumerate(zip(p.steps, p._free_after)):
            if self.segment is not None and not self.segment.joins(step):
                self.segment.flush()
            if self.timed:
                self.emit("start = clock()")
            if isinstance(step, Alloc):
                self.alloc(step)
            elif isinstance(step, SizedAlloc):
                self.sized_alloc(step)
            elif isinstance(step, Launch):
                self.launch(step)
            elif isinstance(step, Call):
                self.call(step)
            else:
                raise ProgramError(f"step {i}: {type(step).__name__} has no straight-line form")
            if free and self.segment is not None:
                self.segment.free(free)
            elif free:
                self.emit(f"del {', '.join(_b(b) for b in free)}")
            if self.timed:
                self.emit(f"on_step({self.name('P', step)}, clock() - start)")
        if self.segment is not None:
            self.segment.flush()
        self.emit(f"return [{', '.join(_b(b) for b in p.outputs)}]")
        source = "\n".join(self.lines) + "\n"
        scope = dict(self.names)
        if self.segment is not None and len(self.segment.segments):  # each N<k> names a segment's index until now
            try:
                functions = self.segment.segments.compile()
            except LoadError:  # no native code here (LLVM cannot link it in this process): each launch on its own
                return _Writer(p, self.timed, native=False).function()
            scope.update({k: functions[v] for k, v in self.names.items() if k.startswith("N")})
            scope["segments"] = self.segment.segments  # owns their code and pointer arrays
        exec(compile(source, f"<tessera program {id(p):#x}>", "exec"), scope)
        run = scope["run"]
        run.source = source  # what it runs, for a reader
        return run

    def _new(self, shape: str, strides: str, dtype: torch.dtype) -> str:
        return f"new({shape}, {strides}, dtype={self.name('D', dtype)}, device=device)"

    def _kept_or_new(self, b: int, fits: str, new: str) -> None:
        """``b`` is last run's tensor when it ``fits`` and nothing else holds it, else ``new``."""
        self.emit(f"t = kept.get({b})")
        self.emit(f"if t is None{fits} or rc(t) > rc(probe) or use(t.untyped_storage()._cdata) > 2:")
        self.emit(f"t = kept[{b}] = {new}", 2)
        self.emit(f"{_b(b)} = t")

    def alloc(self, step: Alloc) -> None:
        memory = self.program._memory
        view = self.pinned.get(step.buffer)
        if view is not None:  # its slot's view, held by the function itself
            self.emit(f"{_b(step.buffer)} = {self.name('V', view)}")
            return
        if memory is not None and step.buffer in memory.plan.slot_of:  # a view of its slot (runtime.memory_plan)
            self.emit(f"{_b(step.buffer)} = {self.name('M', memory.buffer)}({step.buffer})")
            return
        pl = step.placement
        new = self._new(self.name("S", pl.shape), self.name("T", pl.strides), pl.dtype)
        if step.buffer in self.program._outputs:
            self.emit(f"{_b(step.buffer)} = {new}")
        else:
            self._kept_or_new(step.buffer, "", new)

    def sized_alloc(self, step: SizedAlloc) -> None:
        layout = step.layout
        if not isinstance(layout, SizedLayout):  # any other layout: called, as the interpreter does
            self.emit(f"s, st, dt = {self.name('L', layout)}({', '.join(_b(a) for a in step.args)})")
            fits, new = " or (t.shape, t.stride(), t.dtype) != (s, st, dt)", "new(s, st, dtype=dt, device=device)"
        else:
            sizes = [str(add) if i < 0 else _affine(f"{self.sizes_of(step.args[i], 'shape')}[{d}]", mul, add, div)
                     for i, d, mul, add, div in layout.dims]
            self.emit(f"s = ({', '.join(sizes)},)")
            # the kept tensor came from this layout: its dtype and dim order; equal sizes, equal strides
            fits, new = " or t.shape != s", self._new("s", f"dense(s, {self.name('O', layout.order)})", layout.dtype)
        if step.buffer in self.program._outputs:
            self.emit(f"{_b(step.buffer)} = {new}")
        else:
            self._kept_or_new(step.buffer, fits, new)
        if isinstance(layout, SizedLayout):  # the buffer's shape is s (made of it, or checked equal)
            self.sizes[(step.buffer, "shape")] = f"sh{step.buffer}"
            self.emit(f"sh{step.buffer} = s")

    def launch(self, step: Launch) -> None:
        k = step.kernel
        args = [_b(b) for b in step.args]
        trusted = f"{self.name('K', k)}.launch_trusted([{', '.join(args)}])"
        bound = isinstance(k, BoundKernel)  # a dynamic kernel at fixed sizes: its dims array a constant
        if not isinstance(k, Kernel) and not bound:  # several kernels behind one step (runtime.kernel.Launchable)
            self.emit(trusted)
            return
        if k.empty:
            return
        serial = k.serial
        if serial is None or (not bound and type(k).dims_arguments is not Kernel.dims_arguments):
            self.emit(trusted)
            return
        if self.segment is not None and self.segment.joins(step):  # a call of the segment's native function
            self.segment.add(k, step.args)
            return
        fn, launcher = self.name("K", serial), self.name("L", k.launcher)
        pointers = [str(self.pinned[b].data_ptr()) if b in self.pinned else f"{a}.data_ptr()"
                    for a, b in zip(args, step.args, strict=True)]
        if not k.dynamic:
            total, chunks = (k.grid_size if bound else k.signature.grid_size), k.default_chunks
            pointers += [str(a) for a in _trailing(k)]
            if _one_chunk(k):
                self.emit(f"{fn}({', '.join(pointers)}, 0, {total})")
            else:
                self.emit(f"{launcher}([{', '.join(pointers)}], {chunks}, {total})")
            return
        sig = k.signature
        extents = [str(g) if isinstance(g, int) else _extent(self.sizes_of(step.args[g[0]], "shape"), g)
                   for g in sig.grid]
        slots = sig.dim_slots
        values = [f"{self.sizes_of(step.args[i], 'shape' if size else 'stride')}[{d}]" for i, size, d in slots]
        dims = (ctypes.c_int64 * max(1, len(slots)))()
        array = self.name("A", dims)  # filled on each launch: one run at a time uses it
        self.emit(f"n = {' * '.join(extents) or '1'}")
        self.emit("if n:")
        if slots:
            self.emit(f"{array}[:] = ({', '.join(values)},)", 2)
        pointers.append(str(ctypes.addressof(dims)))
        if k.threads <= 1:
            self.emit(f"{fn}({', '.join(pointers)}, 0, n)", 2)
            return
        self.emit(f"c = min({k.threads}, n, ({' + '.join(f'{a}.numel()' for a in args)}) // {k.min_work})", 2)
        self.emit(f"if c <= 1: {fn}({', '.join(pointers)}, 0, n)", 2)
        self.emit(f"else: {launcher}([{', '.join(pointers)}], c, n)", 2)

    def call(self, step: Call) -> None:
        if isinstance(step.fn, SizeConstant):  # a size of a bound program: its value, an int as a literal
            for b, v in zip(step.results, step.fn.values, strict=True):
                self.emit(f"{_b(b)} = {v if type(v) is int else self.name('K', v)}")
            return
        guarded = step.fn if isinstance(step.fn, Guarded) else None
        fn = self.name("F", step.fn if guarded is None else guarded.fn)
        value = f"{fn}({', '.join(_b(b) for b in step.args)})"
        results = [_b(b) for b in step.results]
        if len(results) == 1:
            self.emit(f"{results[0]} = one({value}, {fn})")
        elif results:
            self.emit(f"{', '.join(results)} = many({value}, {len(results)}, {fn})")
        else:
            self.emit(f"many({value}, 0, {fn})")
        for j, p in (guarded.placements.items() if guarded is not None else ()):  # Guarded's check, inline
            r, g = results[j], self.name("G", guarded)
            self.emit(f"if {r}.shape != {self.name('S', p.shape)} or {r}.stride() != {self.name('T', p.strides)}: "
                      f"{g}.changed({j}, {r})")


def pinned_views(program: Program) -> dict[int, torch.Tensor]:
    """The planned buffers (``runtime/memory_plan.py``) whose slot only plain kernel launches
    ever touch, with the view each has now. A launch passes addresses alone, so nothing
    outside the program can come to hold such a slot's memory, and the checks that hand out
    its view (``SlotMemory.buffer``: a view held outside gets a new block) always find it
    free: the function takes the view, and its address, as constants, and holds them, so
    their memory outlives ``SlotMemory.release`` (a run of the interpreter then finds the
    view held, and takes a new block). Slots that a call reads or defines, or a launch of
    several kernels, are checked as before."""
    from tessera.runtime.program import Alloc, Launch

    memory = program._memory
    if memory is None:
        return {}
    slot_of = memory.plan.slot_of
    open_slots = {slot_of[b] for step in program.steps if not isinstance(step, Alloc)
                  and not (isinstance(step, Launch) and isinstance(step.kernel, (Kernel, BoundKernel)))
                  for b in (*getattr(step, "args", ()), *getattr(step, "results", ())) if b in slot_of}
    return {b: memory.views[b] for b, slot in slot_of.items() if slot not in open_slots and b in memory.views}


def _one_chunk(k: Kernel | BoundKernel) -> bool:
    """A static launch that runs its whole grid on the calling thread."""
    total = k.grid_size if isinstance(k, BoundKernel) else k.signature.grid_size
    return not k.dynamic and (k.default_chunks <= 1 or total <= 1)


def _slots_viewed(steps: Sequence[Any], slot_of: dict[int, int]) -> dict[int, set[int]]:
    """The slots whose memory each call's result may view: those of its arguments
    (``runtime/memory_plan.py`` gives them one lifetime)."""
    from tessera.runtime.program import Call

    viewed: dict[int, set[int]] = {}
    for step in steps:
        if isinstance(step, Call):
            slots = {s for a in step.args for s in ({slot_of[a]} if a in slot_of else viewed.get(a, set()))}
            viewed.update({r: slots for r in step.results if slots})
    return viewed


def _trampolines(k: Kernel | BoundKernel) -> Trampolines | None:
    """The OpenMP trampolines of ``k``'s object, where its launches run on OpenMP's threads."""
    return getattr(k.launcher, "trampolines", None) if openmp.available() else None


def _trailing(k: Kernel | BoundKernel) -> Sequence[int]:
    """What a launch passes after the buffers' addresses: a bound kernel's dims array."""
    return k.trailing if isinstance(k, BoundKernel) else ()


class _Segment:
    """The one-chunk launches written since the last step that is not one, and the
    allocations of planned buffers among them: one call of a native function
    (``runtime/native.py``). Each launch writes the addresses of its buffers that
    are not pinned into the segment's pointer array where it stands, so a planned
    buffer is freed where the interpreter frees it (its slot holds the memory, and
    the slot's next view is handed out as before); any other buffer (an input, a
    call's result) is freed once the segment has run."""

    def __init__(self, writer: _Writer):
        self.writer = writer
        self.segments = Segments()
        memory = writer.program._memory
        self.slot_of = memory.plan.slot_of if memory is not None else {}
        self.views_of = _slots_viewed(writer.program.steps, self.slot_of)
        self.launches: list[KernelCall] = []
        self.pointers: dict[int, Pointer] = {}
        """Buffer -> its slot in the pointer array."""
        self.array: str | None = None
        """The pointer array's name, once a launch writes to it."""
        self.frees: list[int] = []

    def joins(self, step: Any) -> bool:
        """Whether ``step`` can be written without running the launches held."""
        from tessera.runtime.program import Alloc, Launch

        if isinstance(step, Alloc):  # a slot's view is handed out only if nothing else holds the slot's memory
            slot = self.slot_of.get(step.buffer)
            return slot is not None and not any(slot in self.views_of.get(b, ()) for b in self.frees)
        if not isinstance(step, Launch):
            return False
        k = step.kernel
        return isinstance(k, (Kernel, BoundKernel)) and (k.empty or (
            k.serial is not None and not k.dynamic and (_one_chunk(k) or _trampolines(k) is not None)
            and (isinstance(k, BoundKernel) or type(k).dims_arguments is Kernel.dims_arguments)))

    def add(self, k: Kernel | BoundKernel, buffers: Sequence[int]) -> None:
        """Launch ``k`` on ``buffers`` in the segment (a static kernel of machine code that :meth:`joins`)."""
        w, pinned = self.writer, self.writer.pinned
        args: list[Argument] = []
        for b in buffers:
            if b in pinned:
                args.append(pinned[b].data_ptr())
                continue
            if b not in self.pointers:
                self.pointers[b] = Pointer(len(self.pointers))
                self.array = self.array or w.name("A", None)  # the array, once the segment is made (flush)
                w.emit(f"{self.array}[{self.pointers[b].index}] = {_b(b)}.data_ptr()")
            args.append(self.pointers[b])
        total = k.grid_size if isinstance(k, BoundKernel) else k.signature.grid_size
        trampolines = None if _one_chunk(k) else _trampolines(k)
        self.launches.append(KernelCall(address_of(k.serial), [*args, *_trailing(k)], total) if trampolines is None
                             else KernelCall(trampolines.addresses[k.launcher.index], [*args, *_trailing(k)], total,
                                             min(k.default_chunks, total)))

    def free(self, buffers: Sequence[int]) -> None:
        now = [b for b in buffers if not self.launches or b in self.slot_of]
        if now:
            self.writer.emit(f"del {', '.join(_b(b) for b in now)}")
        self.frees += [b for b in buffers if b not in now]

    def flush(self) -> None:
        """Writes the call of the launches held, then the frees that waited for it."""
        w = self.writer
        if self.launches:
            array = self.segments.add(self.launches)
            if self.array is not None:
                w.names[self.array] = array
            w.emit(f"{w.name('N', len(self.segments) - 1)}()")
        if self.frees:
            w.emit(f"del {', '.join(_b(b) for b in self.frees)}")
        self.launches, self.pointers, self.array, self.frees = [], {}, None, []


def _b(buffer: int) -> str:
    return f"b{buffer}"


def _affine(size: str, mul: int, add: int, div: int) -> str:
    """``(size * mul + add) // div`` as source, without the identities."""
    term = size if mul == 1 else f"{size} * {mul}"
    term = term if add == 0 else f"{term} + {add}" if add > 0 else f"{term} - {-add}"
    return term if div == 1 else f"({term}) // {div}"


def _extent(shape: str, g: Sequence[int]) -> str:
    """A dynamic grid extent ``(arg, dim)``, ``(arg, dim, tile)`` or ``(arg, dim, tile,
    last)`` as source (``signature.grid_extent``), ``shape`` the local holding the
    argument's shape."""
    size = f"{shape}[{g[1]}]" if len(g) < 4 else " * ".join(f"{shape}[{d}]" for d in range(g[1], g[3] + 1))
    return f"(-(-({size}) // {g[2]}))" if len(g) >= 3 else size
