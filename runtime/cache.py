"""The on-disk compile cache.

Keys are sha256 digests of everything that changes the code: the kernel IR
text, the target (name, triple, CPU, features), the tessera version and a
digest of the code generator's own sources (so an edited emitter never reuses
stale code). An entry is one file, ``<root>/<key[:2]>/<key>.tsa``:

    b"TSRC1\\n" + sha256(payload) + payload        (payload = Artifact.to_bytes())

written to a temporary file in the same directory and ``os.replace``d into
place, so readers see either nothing or a whole entry, and two processes
building the same key both succeed (the last rename wins; both wrote the same
bytes). A truncated or corrupt entry fails its checksum and is rebuilt. A
cache that cannot be written (read-only, full, not a directory) costs a
warning, once per cache, never the built code: :meth:`get_or_build` returns it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from tessera.runtime.artifact import Artifact
from tessera.runtime.options import RuntimeOptions

log = logging.getLogger("tessera.cache")

_MAGIC = b"TSRC1\n"
_DIGEST = 32


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class CompileCache:
    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0
        self.write_errors = 0

    @classmethod
    def default(cls, options: RuntimeOptions | None = None) -> CompileCache | None:
        """The cache under ``RuntimeOptions.cache_dir``, or None when caching is off."""
        root = (options or RuntimeOptions()).cache_dir
        return cls(root) if root is not None else None

    def __repr__(self) -> str:
        return f"CompileCache({str(self.root)!r})"

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.tsa"

    def get(self, key: str) -> Artifact | None:
        """The entry for ``key``, or None if it is missing, truncated or corrupt."""
        try:
            blob = self.path(key).read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + _DIGEST
        if len(blob) < head or not blob.startswith(_MAGIC):
            return None
        payload = blob[head:]
        if hashlib.sha256(payload).digest() != blob[len(_MAGIC):head]:
            return None
        try:
            return Artifact.from_bytes(payload)
        except ValueError:
            return None

    def put(self, key: str, artifact: Artifact) -> Path:
        payload = artifact.to_bytes()
        dest = self.path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=dest.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return dest

    def get_or_build(self, key: str, build: Callable[[], Artifact]) -> Artifact:
        found = self.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        artifact = build()
        try:
            self.put(key, artifact)
        except OSError as e:
            if str(self.root) not in _warned:
                _warned.add(str(self.root))
                log.warning("tessera: compile cache %s cannot be written (%s): built code is used uncached",
                            self.root, e.strerror or e)
            self.write_errors += 1
        return artifact


_warned: set[str] = set()
"""The cache roots already warned about in this process."""
