"""A kernel's grid on OpenMP's threads: the libgomp that torch itself runs on.

    parallel = Trampolines([(kernel_address, 2)])        # every kernel of a loaded object at once
    parallel.run(0, [x.data_ptr(), out.data_ptr()], total=3136, threads=2)

``GOMP_parallel(trampoline, ctx, threads, 0)`` runs a small native trampoline on
every thread of OpenMP's team (the calling thread included); thread ``t`` of
``n`` calls the kernel ``void @k(ptr..., i64 lo, i64 hi)`` on its contiguous
share ``[total*t/n, total*(t+1)/n)``. No Python runs on the workers, and the
team is the one torch's intra-op parallelism keeps warm, so a launch costs a few
microseconds where a Python thread pool costs tens per chunk (measured in
``BENCHMARKS.md``). The trampolines (one per kernel, all of a loaded object in
one module) are LLVM IR compiled here by MCJIT, each kernel's address bound to
a symbol of its own:

    define void @tessera_kernel_7f3a.parallel(ptr %ctx) {   ; ctx = {i64 total, ptr arg0, ptr arg1}
      %t = call i32 @omp_get_thread_num()
      %n = call i32 @omp_get_num_threads()
      ...
      call void @tessera_kernel_7f3a(ptr %arg0, ptr %arg1, i64 %lo, i64 %hi)
    }

Where no libgomp is loaded (a torch built without OpenMP), :func:`available` is
False and the caller keeps its thread pool.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.runtime.errors import LoadError
from tessera.runtime.native import I32 as _I32
from tessera.runtime.native import I64 as _I64
from tessera.runtime.native import PTR as _PTR
from tessera.runtime.native import declare, declare_kernel, jit


@functools.cache
def _gomp() -> ctypes.CDLL | None:
    """The libgomp already in this process (torch's), made visible to MCJIT."""
    import torch  # noqa: F401 - loads torch's libgomp

    try:
        with open("/proc/self/maps") as maps:
            paths = [line.split()[-1] for line in maps if "libgomp" in line and "/" in line]
    except OSError:
        return None
    if not paths:
        return None
    try:
        lib = ctypes.CDLL(paths[0], mode=ctypes.RTLD_GLOBAL)
        lib.GOMP_parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        lib.GOMP_parallel.restype = None
        llvm.load_library_permanently(paths[0])
    except (OSError, AttributeError, RuntimeError):
        return None
    return lib


def available() -> bool:
    return _gomp() is not None


def _add_trampoline(module: ir.Module, address: int, num_buffers: int) -> str:
    """Adds kernel ``address``'s trampoline to ``module``; returns its name."""
    thread_num = declare(module, "omp_get_thread_num", ir.FunctionType(_I32, []))
    num_threads = declare(module, "omp_get_num_threads", ir.FunctionType(_I32, []))
    callee = declare_kernel(module, address, num_buffers)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR]), f"{callee.name}.parallel")
    ctx = fn.args[0]
    entry, call, done = (fn.append_basic_block(n) for n in ("entry", "call", "done"))
    b = ir.IRBuilder(entry)
    slots = [b.gep(ctx, [ir.Constant(_I64, i)], inbounds=True, source_etype=_I64) for i in range(1 + num_buffers)]
    total = b.load(slots[0], typ=_I64)
    t = b.sext(b.call(thread_num, []), _I64)
    n = b.sext(b.call(num_threads, []), _I64)
    lo = b.sdiv(b.mul(total, t), n)
    hi = b.sdiv(b.mul(total, b.add(t, ir.Constant(_I64, 1))), n)
    b.cbranch(b.icmp_signed("<", lo, hi), call, done)
    b.position_at_end(call)
    b.call(callee, [*(b.load(s, typ=_PTR) for s in slots[1:]), lo, hi])
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn.name


class Trampolines:
    """The native ``void @<kernel>.parallel(ptr %ctx)`` (``ctx = {i64 total,
    ptr arg0, ...}``) of each kernel of one loaded object, compiled together:
    one MCJIT engine per object (about 5-10 ms), not one per kernel, and only
    when a kernel of the object first runs on more than one thread (a program
    run on one thread, or a graph loaded from the cache and not yet run, never
    pays for it)."""

    def __init__(self, kernels: Sequence[tuple[int, int]]):
        """``kernels``: (address, number of buffers) of each kernel."""
        self._kernels = list(kernels)
        self._addresses: list[int] | None = None
        self._lock = threading.Lock()

    @property
    def addresses(self) -> list[int]:
        """Each kernel's trampoline (compiled on first use)."""
        if self._addresses is None:
            with self._lock:
                if self._addresses is None:
                    self._addresses = self._compile()
        return self._addresses

    def _compile(self) -> list[int]:
        module = ir.Module(name="tessera_parallel")
        names = [_add_trampoline(module, address, num_buffers) for address, num_buffers in self._kernels]
        self._engine = jit(module)  # owns the trampolines' code
        return [self._engine.get_function_address(n) for n in names]

    def run(self, index: int, pointers: Sequence[int], total: int, threads: int) -> None:
        """Runs kernel ``index``'s ``[0, total)`` split over ``threads`` OpenMP threads."""
        ctx = (ctypes.c_void_p * (1 + len(pointers)))(total, *pointers)
        gomp = _gomp()
        if gomp is None:
            raise LoadError("libgomp is not loaded")
        gomp.GOMP_parallel(self.addresses[index], ctypes.addressof(ctx), threads, 0)
