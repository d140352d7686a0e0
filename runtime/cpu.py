"""Loading x86 objects into this process and running them on every core.

An object from the x86 emitter is linked in memory by LLVM's MCJIT
(``ExecutionEngine.add_object_file``; no C compiler, no shared library on
disk). Each kernel ``void @k(ptr..., i64 lo, i64 hi)`` runs its grid
``[0, prod(grid))`` split into contiguous chunks on OpenMP's threads (the
libgomp torch runs on, through a native trampoline: ``runtime/openmp.py``);
where there is no libgomp, on a Python thread pool through ctypes, which
releases the GIL. Small kernels run on the calling thread.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import llvmlite.binding as llvm

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import LoadError
from tessera.runtime.native import init_llvm

KernelFn = Callable[..., None]


@functools.cache
def host_features() -> frozenset[str]:
    init_llvm()
    return frozenset(f for f, on in llvm.get_host_cpu_features().items() if on)


class LoadedObject:
    """An object file linked into this process; owns the code's memory."""

    def __init__(self, artifact: Artifact):
        init_llvm()
        if artifact.kind != "obj":
            raise LoadError(f"the cpu device loads objects, not {artifact.target}/{artifact.kind}")
        arch = llvm.get_process_triple().split("-")[0]
        if artifact.triple and artifact.triple.split("-")[0] != arch:
            raise LoadError(f"the object was built for {artifact.triple}; this process runs {arch} code")
        missing = sorted(set(artifact.required_features) - host_features())
        if missing:
            raise LoadError(f"this CPU lacks features the code was built for: {', '.join(missing)}")
        tm = llvm.Target.from_default_triple().create_target_machine(jit=True)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        self._object = llvm.ObjectFileRef.from_data(artifact.data)
        try:
            self._engine.add_object_file(self._object)
            self._engine.finalize_object()
        except RuntimeError as err:
            raise LoadError(f"cannot link the x86 object: {err}") from None

    def address(self, name: str) -> int:
        address = self._engine.get_function_address(name)
        if not address:
            raise LoadError(f"the object has no symbol @{name}")
        return address

    def function(self, name: str, num_pointers: int) -> KernelFn:
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * num_pointers), ctypes.c_int64, ctypes.c_int64)
        return proto(self.address(name))


class ThreadPool:
    """A process-wide pool of ``n - 1`` workers; the calling thread runs one chunk itself."""

    _lock = threading.Lock()
    _pools: dict[int, ThreadPoolExecutor] = {}

    @classmethod
    def get(cls, threads: int) -> ThreadPoolExecutor:
        with cls._lock:
            pool = cls._pools.get(threads)
            if pool is None:
                pool = cls._pools[threads] = ThreadPoolExecutor(max_workers=max(1, threads - 1), thread_name_prefix="tessera-cpu")
            return pool


def split(total: int, chunks: int) -> list[tuple[int, int]]:
    """``[0, total)`` as ``chunks`` contiguous, nearly equal, non-empty ranges."""
    chunks = max(1, min(chunks, total))
    bounds = [total * i // chunks for i in range(chunks + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(chunks)]


def run_chunks(fn: KernelFn, pointers: Sequence[int], total: int, chunks: int, threads: int) -> None:
    ranges = split(total, chunks)
    if len(ranges) == 1:
        fn(*pointers, 0, total)
        return
    pool = ThreadPool.get(threads)
    futures = [pool.submit(fn, *pointers, lo, hi) for lo, hi in ranges[1:]]
    lo, hi = ranges[0]
    fn(*pointers, lo, hi)
    for fut in futures:
        fut.result()


def launchers(code: LoadedObject, signatures: Sequence, threads: int) -> dict[str, Callable[[Sequence[int], int, int], None]]:
    """``launch(pointers, chunks, total)`` for each kernel of ``code``: one chunk on the
    calling thread, more on OpenMP's threads (or the thread pool)."""
    from tessera.runtime import openmp

    parallel = (openmp.Trampolines([(code.address(s.name), s.num_pointers) for s in signatures])
                if openmp.available() else None)
    out: dict[str, Callable[[Sequence[int], int, int], None]] = {}
    for index, sig in enumerate(signatures):
        fn = code.function(sig.name, sig.num_pointers)

        def launch(pointers: Sequence[int], chunks: int, total: int, fn=fn, index=index) -> None:
            if chunks <= 1 or total <= 1:
                fn(*pointers, 0, total)
            elif parallel is not None:
                parallel.run(index, pointers, total, min(chunks, total))
            else:
                run_chunks(fn, pointers, total, chunks, threads)

        launch.trampolines = parallel  # type: ignore[attr-defined] # keeps the trampolines' code alive
        launch.index = index  # type: ignore[attr-defined] # its trampoline's: what a runner's segment calls threaded
        launch.serial = fn  # type: ignore[attr-defined] # one chunk: what a straight-line runner calls (runtime/runner.py)
        out[sig.name] = launch
    return out
