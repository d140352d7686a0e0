"""A loaded kernel, launched on torch tensors after checking them against its signature.

    k = module.kernel("fused_0")
    k(x, bias, out)            # writes out; raises SignatureMismatch on a wrong tensor
    k.launch(x, bias, out, chunks=3)   # an explicit split of the grid (tests, tuning)

A kernel with dynamic sizes (``KernelSignature.dynamic``) checks the sizes and
strides it knows, and is given the others, and its grid, on each launch.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from tessera.runtime.errors import SignatureMismatch, SizesChanged
from tessera.runtime.layouts import extent, same_strides
from tessera.runtime.options import RuntimeOptions
from tessera.runtime.signature import DYNAMIC, KernelSignature

Launcher = Callable[[Any, int, int], None]
"""``launcher(pointers, chunks, total)`` runs the whole grid of ``total`` points split into
``chunks`` ranges (a dynamic kernel's last pointer is its dims array). A device
whose launch API binds tensors, not addresses (``mps``), is given the checked tensors instead
(``Kernel(..., takes_tensors=True)``)."""


class Launchable(Protocol):
    """What a program's ``Launch`` runs: a :class:`Kernel`, or an object that launches
    several behind one step (x86's ``WinogradConv``). Called with the step's tensors
    it checks them and runs; ``launch_trusted`` runs tensors placed as a checked call's."""

    @property
    def name(self) -> str: ...

    def __call__(self, *tensors: torch.Tensor) -> None: ...

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None: ...


def placements_of(tensors: Sequence[object]) -> tuple:
    """What a launch's check depends on, per tensor: ``(dtype, shape, strides, device)``
    (anything else as it is). Equal tuples mean a check passed for one passes for the
    other, up to aliasing: the key of "checked once" in programs and sized kernels."""
    return tuple((t.dtype, t.shape, t.stride(), t.device) if isinstance(t, torch.Tensor) else t for t in tensors)


class Kernel:
    def __init__(self, signature: KernelSignature, device: torch.device, launcher: Launcher, options: RuntimeOptions,
                 *, takes_tensors: bool = False):
        self.signature = signature
        self.device = device
        self._launcher = launcher
        self._takes_tensors = takes_tensors
        self._module: object = None  # set by the Module that owns the code, to keep it alive
        self._dtypes = tuple(_torch_dtype(a.dtype) for a in signature.args)
        self.threads, self.min_work = options.num_threads, options.min_work_per_thread
        """How a launch splits its grid: at most ``threads`` chunks of at least ``min_work`` elements."""
        self.dynamic = signature.dynamic
        """Sizes come with each launch: the grid and the dims array are computed from the tensors."""
        self.default_chunks = self._chunks(signature.grid_size, [a.numel for a in signature.args])
        self._direct = (getattr(launcher, "serial", None)
                        if not (self.dynamic or takes_tensors or self.default_chunks > 1) else None)
        """The machine code a trusted launch of one chunk calls itself, as ``runner.py`` does
        (a Python-side launch: a per-call weight pack, a Winograd step)."""
        self._dim_slots = signature.dim_slots
        self.empty = not self.dynamic and signature.grid_size == 0
        """An empty grid (the kernel writes a tensor with an empty dim): nothing to launch."""
        self.origin: tuple | None = None
        """How another process gets this kernel again, ``(function, args)`` (the loader
        of a spec's kernel sets it): what a pickled program holding it stores."""

    @property
    def name(self) -> str:
        return self.signature.name

    def __repr__(self) -> str:
        return f"Kernel(@{self.name}, grid={self.signature.grid})"

    def __reduce__(self) -> tuple:
        if self.origin is None:
            raise TypeError(f"kernel @{self.name} does not pickle: nothing says how to load it again")
        return self.origin

    def __call__(self, *tensors: torch.Tensor) -> None:
        self.launch(*tensors)

    def _chunks(self, total: int, numels: Sequence[int]) -> int:
        return max(1, min(self.threads, total, sum(numels) // self.min_work))

    @property
    def serial(self) -> Callable[..., None] | None:
        """The machine code itself, ``fn(*pointers, lo, hi)`` on grid points ``[lo, hi)``
        of the calling thread, where the launcher exposes it (the cpu device's): what
        a straight-line runner calls for a one-chunk launch (``runtime/runner.py``)."""
        return None if self._takes_tensors else getattr(self._launcher, "serial", None)

    @property
    def launcher(self) -> Launcher:
        return self._launcher

    def bind(self, tensors: Sequence[torch.Tensor]) -> Launchable:
        """This kernel at the sizes of ``tensors``: itself when its sizes are static,
        else a :class:`BoundKernel` (a program bound to one run's sizes, ``runtime/size_binding.py``)."""
        return BoundKernel(self, tensors) if self.dynamic else self

    def checking(self, signature: KernelSignature) -> Kernel:
        """This kernel's code, checking its tensors against ``signature``: the same grid and
        pointers, other shapes (a 1x1 conv computed on its pixels as other rows,
        ``conv/rows.py``). A new object: a loaded kernel is shared by everyone who loads it."""
        kernel = object.__new__(Kernel)
        kernel.__dict__.update(self.__dict__)
        kernel.signature = signature
        return kernel

    def launch(self, *tensors: torch.Tensor, chunks: int | None = None) -> None:
        self.check(tensors)
        self._launch(tensors, chunks)

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        """Launches without :meth:`check`: for a :class:`~tessera.runtime.program.Program`
        whose buffers were checked against this kernel on an earlier run with the same inputs."""
        direct = self._direct
        if direct is None:
            self._launch(tensors, None)
        elif not self.empty:
            direct(*[t.data_ptr() for t in tensors], 0, self.signature.grid_size)

    def _launch(self, tensors: Sequence[torch.Tensor], chunks: int | None) -> None:
        if self.empty:
            return
        if not self.dynamic:
            self._start(tensors, (), self.default_chunks if chunks is None else chunks, self.signature.grid_size)
            return
        total = self.signature.grid_size_of(tensors)
        if total == 0:
            return
        dims, keep = self.dims_arguments(self.signature.dims_of(tensors, self._dim_slots))  # noqa: F841 - alive until the launch returns
        self._start(tensors, dims, self._chunks(total, [t.numel() for t in tensors]) if chunks is None else chunks, total)

    def _start(self, tensors: Sequence[torch.Tensor], trailing: Sequence[Any], chunks: int, total: int) -> None:
        """Runs the launcher on ``tensors`` (their addresses, or themselves where the
        device binds tensors) and ``trailing`` (a dynamic kernel's dims arguments)."""
        args: list[Any] = list(tensors) if self._takes_tensors else [t.data_ptr() for t in tensors]
        self._launcher([*args, *trailing], max(1, chunks), total)

    def dims_arguments(self, dims: list[int]) -> tuple[list[Any], object]:
        """What a dynamic kernel's launch passes after the buffers for its ``dims``
        (a CPU kernel: the address of an ``i64`` array; devices override it), and what
        must stay alive while it runs."""
        array = (ctypes.c_int64 * max(1, len(dims)))(*dims)
        return [ctypes.addressof(array)], array

    def check(self, tensors: Sequence[torch.Tensor]) -> None:
        """Raises :class:`SignatureMismatch` unless every tensor is what the code expects."""
        sig = self.signature
        if len(tensors) != len(sig.args):
            raise SignatureMismatch(f"kernel @{sig.name} takes {len(sig.args)} tensors, got {len(tensors)}")
        for i, (t, spec, dtype) in enumerate(zip(tensors, sig.args, self._dtypes)):
            where = f"kernel @{sig.name} argument #{i}"
            if not isinstance(t, torch.Tensor):
                raise SignatureMismatch(f"{where}: expected a tensor, got {type(t).__name__}")
            if t.device.type != self.device.type:
                raise SignatureMismatch(f"{where}: tensor is on {t.device}, the kernel runs on {self.device}")
            if t.dtype != dtype:
                raise SignatureMismatch(f"{where}: dtype {t.dtype} != expected {dtype}")
            if t.dim() != len(spec.shape) or any(n not in (DYNAMIC, m) for n, m in zip(spec.shape, t.shape)):
                raise SignatureMismatch(f"{where}: shape {tuple(t.shape)} != expected {_show(spec.shape)}")
            if not same_strides(t.shape, t.stride(), spec.strides):
                raise SignatureMismatch(f"{where}: strides {t.stride()} != expected {_show(spec.strides)}")
            if spec.rows and not spec.merges(t.shape, t.stride()):
                raise SignatureMismatch(f"{where}: strides {t.stride()} do not merge dims {list(spec.rows)} into rows")
        self._check_aliasing(tensors)

    def _check_aliasing(self, tensors: Sequence[torch.Tensor]) -> None:
        # Arguments are `noalias` in the emitted code: an output may share memory with no other argument.
        spans = [_byte_span(t) for t in tensors]
        for i in self.signature.outputs:
            for j, other in enumerate(spans):
                if j != i and spans[i][0] < other[1] and other[0] < spans[i][1]:
                    raise SignatureMismatch(f"kernel @{self.name}: output argument #{i} overlaps argument #{j} in memory")


def _show(sizes: Sequence[int]) -> str:
    """Sizes or strides as an error prints them, ``?`` where dynamic: ``(?, 8)``."""
    return "(" + ", ".join("?" if n == DYNAMIC else str(n) for n in sizes) + (",)" if len(sizes) == 1 else ")")


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    return (t.data_ptr(), t.data_ptr() + extent(t.shape, t.stride()) * t.element_size())


class BoundKernel:
    """A kernel of run-time sizes at the sizes of one set of tensors: its grid,
    chunks and dims arguments computed once, so it launches as a static kernel
    does (``runner.py`` calls its machine code with the dims array's address as a
    constant). Launched with a check on tensors of other sizes it raises
    :class:`SizesChanged`."""

    dynamic = False

    def __init__(self, kernel: Kernel, tensors: Sequence[torch.Tensor]):
        sig = kernel.signature
        self.kernel, self.signature = kernel, sig
        self.grid_size = sig.grid_size_of(tensors)
        self.dims = sig.dims_of(tensors, kernel._dim_slots)
        self.trailing, self._keep = kernel.dims_arguments(self.dims)
        """What each launch passes after the buffers, and what keeps it alive."""
        self.default_chunks = kernel._chunks(self.grid_size, [t.numel() for t in tensors])
        self.empty = self.grid_size == 0

    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def serial(self) -> Callable[..., None] | None:
        return self.kernel.serial

    @property
    def launcher(self) -> Launcher:
        return self.kernel.launcher

    def __call__(self, *tensors: torch.Tensor) -> None:
        self.kernel.check(tensors)
        sig = self.signature
        if sig.grid_size_of(tensors) != self.grid_size or sig.dims_of(tensors, self.kernel._dim_slots) != self.dims:
            raise SizesChanged(f"kernel @{self.name} was bound to other sizes")
        self.launch_trusted(tensors)

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        if not self.empty:
            self.kernel._start(tensors, self.trailing, self.default_chunks, self.grid_size)


def _torch_dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise SignatureMismatch(f"signature names unknown dtype {name!r}")
    return dtype


