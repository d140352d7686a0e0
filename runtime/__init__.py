"""tessera's runtime: one interface for every device.

    from tessera.runtime import Device, Program
    module = Device("cpu").load(artifact)            # an artifact the compiler built (compiler/build.py)
    module.kernel("fused_0")(x, out)                 # checked against its KernelSignature

The runtime knows neither the IR nor the compiler: it runs artifacts on
tensors in plain placements (dtype, shape, strides).

Modules: ``signature`` (what a kernel expects), ``artifact`` (compiled code +
signatures), ``device``/``cpu`` (loading and launching), ``kernel``/``module``,
``cache`` (on-disk compile cache), ``program`` (a compiled graph), ``layouts``.
Names are imported lazily so that ``tessera.runtime.layouts`` stays light.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Artifact": "artifact", "BufferSpec": "signature", "KernelSignature": "signature",
    "CompileCache": "cache", "Device": "device", "Kernel": "kernel", "Module": "module",
    "RuntimeOptions": "options", "Program": "program", "Alloc": "program", "Launch": "program",
    "Call": "program",
}


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'tessera.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tessera.runtime.{mod}"), name)


__all__ = sorted(_EXPORTS)
