"""A compiled graph's host program as bytes, as the graph cache stores it, so
that a process with a warm cache runs the program with no IR loaded: no xDSL
import, no parse, no rebuild of the steps.

    blob = dump_program(host, kernels)    # host: a HostProgram; kernels: the Module of its fused kernels
    host = load_program(blob, kernels)    # another process, the artifact loaded again

It is a pickle. Every step's callable holds plain values (``host_steps``,
``library_calls``, the conv epilogue); a fused kernel is stored by its name and
found in ``kernels`` again; a kernel built from a spec (an x86 conv) by how it
is loaded (``Kernel.origin``: its spec, through the compile cache); values
prepared from weights are not stored. Reading one runs code, as loading the
machine code beside it does: the cache's trust model (``runtime/cache.py``)
covers both. A program that does not pickle is stored as IR text only.
"""

from __future__ import annotations

import io
import pickle

from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module

from .host_steps import HostProgram


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, kernels: Module | None):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = {id(kernels.kernel(n)): n for n in kernels} if kernels is not None else {}

    def persistent_id(self, obj: object) -> tuple[str, str] | None:
        if isinstance(obj, Kernel) and id(obj) in self._names:
            return ("fused", self._names[id(obj)])
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, kernels: Module | None):
        super().__init__(file)
        self._kernels = kernels

    def persistent_load(self, pid: tuple[str, str]) -> Kernel:
        kind, name = pid
        if kind != "fused" or self._kernels is None:
            raise pickle.UnpicklingError(f"a stored program launches {kind} kernel {name!r}, which is not loaded")
        return self._kernels.kernel(name)


def dump_program(host: HostProgram, kernels: Module | None) -> bytes:
    """``host`` as bytes; raises (``TypeError``, ``pickle.PicklingError``,
    ``AttributeError``) where a step holds something that does not pickle."""
    out = io.BytesIO()
    _Pickler(out, kernels).dump(host)
    return out.getvalue()


def load_program(blob: bytes, kernels: Module | None) -> HostProgram:
    """The program ``dump_program`` stored, launching ``kernels``; raises on an
    entry that is not one (any exception: the caller compiles the graph instead)."""
    host = _Unpickler(io.BytesIO(blob), kernels).load()
    if not isinstance(host, HostProgram):
        raise pickle.UnpicklingError(f"a stored program is a {type(host).__name__}")
    return host
