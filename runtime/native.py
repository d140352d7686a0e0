"""Native code that calls loaded kernels by address, compiled in this process by MCJIT.

Two users: OpenMP's trampolines (``runtime/openmp.py``: one kernel's grid on every
thread) and a straight-line runner's *segments* (:class:`Segments`): a run of
launches (each on the calling thread, or split over OpenMP's threads) called from
one machine-code function, so that Python makes one call where it made one per
kernel:

    define void @tessera_segment_0() {
      %p1 = load ptr, ptr inttoptr (i64 <pointers> to ptr)      ; written by Python before the call
      call void @tessera_kernel_7f3a(ptr %p1, ptr inttoptr (i64 <pinned buffer> to ptr), i64 0, i64 32)
      call void @tessera_kernel_7f40(ptr inttoptr (i64 <pinned buffer> to ptr), ptr %p1, i64 0, i64 1024)
      ret void
    }

A kernel is ``void @k(ptr..., i64 lo, i64 hi)`` (``runtime/cpu.py``); each is
bound to a symbol named for its address (``llvm.add_symbol``). A launch split over
threads is ``GOMP_parallel(<its trampoline>, ctx, threads, 0)``, the run-time
addresses stored into its ``ctx`` first.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.runtime.errors import LoadError

I32, I64, PTR = ir.IntType(32), ir.IntType(64), ir.PointerType()


@functools.cache
def init_llvm() -> None:
    """LLVM's native target, once per process."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    """External function ``name`` of ``module``, declared once."""
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, fnty, name)


def declare_kernel(module: ir.Module, address: int, num_pointers: int) -> ir.Function:
    """The kernel at ``address`` as an external function of ``module``."""
    name = f"tessera_kernel_{address:x}"
    llvm.add_symbol(name, address)
    return declare(module, name, ir.FunctionType(ir.VoidType(), [PTR] * num_pointers + [I64, I64]))


def jit(module: ir.Module) -> llvm.ExecutionEngine:
    """``module`` compiled for this CPU and linked in memory; the engine owns the code."""
    init_llvm()
    module.triple = llvm.get_process_triple()
    try:
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
        tm = llvm.Target.from_default_triple().create_target_machine(jit=True)  # the engine takes it over
        engine = llvm.create_mcjit_compiler(parsed, tm)
        engine.finalize_object()
    except RuntimeError as err:
        raise LoadError(f"cannot compile native module {module.name}: {err}") from None
    return engine


def address_of(fn: Callable[..., None]) -> int:
    """The machine address of a ctypes function (a kernel's ``serial``)."""
    try:
        address = ctypes.cast(fn, ctypes.c_void_p).value  # type: ignore[arg-type] # a CFUNCTYPE object
    except ctypes.ArgumentError:
        address = None
    if not address:
        raise LoadError(f"{fn!r} has no machine address")
    return address


@dataclass(frozen=True)
class Pointer:
    """A launch argument known only at run time: slot ``index`` of its segment's pointer array."""

    index: int


Argument = int | Pointer
"""An address (or a bound kernel's dims array) fixed when the segment is made, or a :class:`Pointer`."""


class KernelCall(NamedTuple):
    """One launch of a segment: the kernel at ``address`` on its grid ``[0, total)``; where
    ``threads > 1``, ``address`` is its OpenMP trampoline's (``runtime/openmp.py``),
    run on that many threads of OpenMP's team."""

    address: int
    args: Sequence[Argument]
    total: int
    threads: int = 1


class Segments:
    """The segments of one runner, compiled together into one engine:

        segments = Segments()
        pointers = segments.add([KernelCall(address_of(k.serial), [Pointer(0), 0x5581e000], 32)])
        run = segments.compile()[0]
        pointers[0] = x.data_ptr(); run()          # k(x, <pinned>, 0, 32)
    """

    def __init__(self) -> None:
        self._segments: list[tuple[Sequence[KernelCall], ctypes.Array]] = []
        self._contexts: list[ctypes.Array] = []
        """Each threaded launch's ``{i64 total, ptr arg0, ...}``, its constants written once."""
        self._engine: llvm.ExecutionEngine | None = None

    def __len__(self) -> int:
        return len(self._segments)

    def add(self, launches: Sequence[KernelCall]) -> ctypes.Array:
        """A segment of ``launches``, in order; returns its pointer array (one ``i64``
        per :class:`Pointer` index), to fill before each call."""
        size = 1 + max((a.index for call in launches for a in call.args if isinstance(a, Pointer)), default=0)
        pointers = (ctypes.c_int64 * size)()
        self._segments.append((list(launches), pointers))
        return pointers

    def compile(self) -> list[Callable[[], None]]:
        """Each segment as a function of no arguments (the pointer arrays stay alive with this object)."""
        init_llvm()
        module = ir.Module(name="tessera_segments")
        names = []
        for i, (launches, pointers) in enumerate(self._segments):
            fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), f"tessera_segment_{i}")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            base = _address(ctypes.addressof(pointers))

            def value(a: Argument, b: ir.IRBuilder = b, base: ir.Constant = base) -> ir.Value:
                if isinstance(a, Pointer):
                    return b.load(b.gep(base, [ir.Constant(I64, a.index)], inbounds=True, source_etype=I64), typ=PTR)
                return _address(a)

            for call in launches:
                if call.threads <= 1:
                    callee = declare_kernel(module, call.address, len(call.args))
                    b.call(callee, [*map(value, call.args), ir.Constant(I64, 0), ir.Constant(I64, call.total)])
                else:
                    self._threaded(module, b, call, value)
            b.ret_void()
            names.append(fn.name)
        self._engine = jit(module)
        proto = ctypes.CFUNCTYPE(None)
        return [proto(self._engine.get_function_address(n)) for n in names]

    def _threaded(self, module: ir.Module, b: ir.IRBuilder, call: KernelCall,
                  value: Callable[[Argument], ir.Value]) -> None:
        """``GOMP_parallel(trampoline, ctx, threads, 0)``, the run-time addresses stored into ctx first."""
        ctx = (ctypes.c_int64 * (1 + len(call.args)))(call.total, *(a if isinstance(a, int) else 0 for a in call.args))
        self._contexts.append(ctx)
        base = _address(ctypes.addressof(ctx))
        for j, a in enumerate(call.args):
            if isinstance(a, Pointer):
                b.store(value(a), b.gep(base, [ir.Constant(I64, 1 + j)], inbounds=True, source_etype=I64))
        gomp = declare(module, "GOMP_parallel", ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32]))
        b.call(gomp, [_address(call.address), base, ir.Constant(I32, call.threads), ir.Constant(I32, 0)])


def _address(value: int) -> ir.Constant:
    return ir.Constant(I64, value).inttoptr(PTR)
