"""Digests of tessera's own sources, part of every compile-cache key, so that a
cached entry never outlives the code that made it:

- :func:`codegen_fingerprint` for kernel artifacts: the shared emitter
  (``codegen/``) and every target's own (``targets/``: the x86 conv and int8
  microkernels, the PTX and Metal printers);
- :func:`tessera_fingerprint` for compiled graphs (``graph_cache.py``): every
  source of the compiler, passes, dialect and runtime, and the versions of the
  libraries that shape what is built (torch, xDSL, llvmlite)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path


def _digest(files: Iterable[tuple[str, Path]]) -> str:
    h = hashlib.sha256()
    for name, path in sorted(files):
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def codegen_fingerprint() -> str:
    compiler = Path(__file__).parents[1]
    return _digest((str(p.relative_to(compiler)), p)
                   for folder in ("codegen", "targets") for p in (compiler / folder).rglob("*.py"))


PACKAGES = ("tessera.compiler", "tessera.dialects", "tessera.passes", "tessera.runtime")
LIBRARIES = ("torch", "xdsl", "llvmlite")


@functools.cache
def tessera_fingerprint() -> str:
    files = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            files += [(f"{package}/{p.relative_to(root)}", p) for p in Path(root).rglob("*.py")]
    versions = ",".join(f"{lib}={_version(lib)}" for lib in LIBRARIES)
    return f"{_digest(files)}|{versions}"


@functools.cache
def tessera_version() -> str:
    return _version("tessera")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "0+unknown"
