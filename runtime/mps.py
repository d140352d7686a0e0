"""Loading Metal kernels on an Apple GPU through torch's MPS backend.

    module = mps.load(Artifact(target="metal", kind="msl", data=source, signatures=...), torch.device("mps"))
    module.kernel("fused_0")(x_mps, out_mps)     # lib.fused_0(x, out, threads=[prod(grid)])

An ``msl`` artifact (MSL source from ``compiler.targets.metal.msl``) is compiled at load
time by ``torch.mps.compile_shader``; a ``metallib`` one (``xcrun metal``) is loaded
with ``torch.mps.load_metallib``. Either returns a library whose kernels torch
launches on its own command queue: each tensor binds to the ``[[buffer(i)]]`` of
its position, and ``threads`` = prod(grid) threads are dispatched (one per grid
point; the kernel bound-checks ``tid``). A kernel with sizes known only at run
time takes its dims array (``KernelSignature.dims_of``) as one more argument, a
list of ints that torch copies into a ``constant long*`` buffer (``setBytes``):

    lib.fused_0(x, out, [x.shape[0], out.shape[0]], threads=[x.shape[0] * 8])

A kernel with more than 31 buffers (its dims buffer counted) is printed with one
argument buffer, which this launcher cannot fill (torch binds tensors, not GPU
addresses): loading it is a :class:`LoadError`.
"""

from __future__ import annotations

import torch

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import LoadError, SignatureMismatch, UnsupportedDevice
from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

MAX_BUFFERS = 31
"""Metal's buffer argument table (``compiler.targets.metal.msl.MAX_BUFFERS``)."""
MAX_THREADS = 2**32 - 1
"""A kernel's ``tid`` is a ``uint`` (``thread_position_in_grid``)."""


class MpsKernel(Kernel):
    """A :class:`Kernel` whose launch passes torch tensors, and a dynamic kernel's dims as a list."""

    def dims_arguments(self, dims: list[int]) -> tuple[list, object]:
        """The dims as one list of ints, which ``torch.mps`` binds as an ``int64`` array in the
        ``constant`` address space at the next buffer index (an empty list does not bind: ``[0]``)."""
        return [list(dims) or [0]], None


def _launch(fn, name: str, tensors, total: int) -> None:
    if total > MAX_THREADS:
        raise SignatureMismatch(f"kernel @{name}: a grid of {total} points exceeds Metal's 32-bit thread_position_in_grid")
    fn(*tensors, threads=[total])


def unavailable_reason(device: torch.device) -> str | None:
    """Why Metal kernels cannot run here, or None."""
    if not torch.backends.mps.is_available():
        return "no MPS device (torch.backends.mps.is_available() is False: it needs an Apple GPU and macOS)"
    return None


def _library(artifact: Artifact):
    if artifact.kind not in ("msl", "metallib"):
        raise LoadError(f"the mps device loads Metal source or metallibs, not {artifact.target}/{artifact.kind}")
    try:
        if artifact.kind == "msl":
            return torch.mps.compile_shader(artifact.data.decode("ascii"))
        return torch.mps.load_metallib(artifact.data)
    except (RuntimeError, UnicodeDecodeError) as err:
        raise LoadError(f"Metal could not {'compile' if artifact.kind == 'msl' else 'load'} the kernels: {err}") from None


def load(artifact: Artifact, device: torch.device, options: RuntimeOptions | None = None) -> Module:
    """Every kernel of ``artifact`` as a :class:`Kernel` launching on ``device`` (mps)."""
    reason = unavailable_reason(device)
    if reason:
        raise UnsupportedDevice(f"device 'mps' cannot run kernels here: {reason}")
    options = options or RuntimeOptions()
    library = _library(artifact)
    kernels = {}
    for sig in artifact.signatures:
        if sig.num_pointers > MAX_BUFFERS:
            raise LoadError(f"kernel @{sig.name} takes {sig.num_pointers} buffers, more than Metal's {MAX_BUFFERS}: it is "
                            "printed with an argument buffer, which torch.mps cannot bind")
        try:
            fn = getattr(library, sig.name)
        except (AttributeError, RuntimeError):
            raise LoadError(f"the Metal library has no kernel @{sig.name}") from None

        def launcher(tensors, chunks, total, fn=fn, name=sig.name):
            _launch(fn, name, tensors, total)

        kernels[sig.name] = MpsKernel(sig, device, launcher, options, takes_tensors=True)
    return Module(artifact, kernels, keepalive=library)
