"""A digest of the code generator's sources, part of every compile-cache key,
so that cached machine code never outlives the emitter that made it."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path


@functools.cache
def codegen_fingerprint() -> str:
    h = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def tessera_version() -> str:
    try:
        return metadata.version("tessera")
    except metadata.PackageNotFoundError:
        return "0+unknown"
