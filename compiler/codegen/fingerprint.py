"""A digest of the code generator's sources, part of every compile-cache key,
so that cached machine code never outlives the emitter that made it: the
shared emitter (``codegen/``) and every target's own (``targets/``: the x86
conv and int8 microkernels, the PTX and Metal printers)."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path


@functools.cache
def codegen_fingerprint() -> str:
    h = hashlib.sha256()
    compiler = Path(__file__).parents[1]
    for path in sorted(p for folder in ("codegen", "targets") for p in (compiler / folder).rglob("*.py")):
        h.update(str(path.relative_to(compiler)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def tessera_version() -> str:
    try:
        return metadata.version("tessera")
    except metadata.PackageNotFoundError:
        return "0+unknown"
