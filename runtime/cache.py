"""The compile cache: a local directory, and optionally a remote tier that a
fleet shares (a Redis server, ``runtime/remote_cache.py``).

Keys are sha256 digests of everything that changes what is stored: for a
kernel artifact the kernel IR text, the target (name, triple, CPU, features),
the tessera version and a digest of the code generator's own sources (so an
edited emitter never reuses stale code); for a compiled graph
(``compiler/graph_cache.py``) the ATen graph, its inputs and options and a
digest of all of tessera's sources. An entry is one file,
``<root>/<key[:2]>/<key>.tsa``:

    b"TSRC2\\n" + sha256(key + payload) + payload     (payload: Artifact.to_bytes(), a graph's entry)

written to a temporary file in the same directory and ``os.replace``d into
place, so readers see either nothing or a whole entry, and two processes
building the same key both succeed (the last rename wins; both wrote the same
bytes). A truncated or corrupt entry fails its checksum, and one stored under
another key (the checksum covers the key) is foreign: either is rebuilt. A
cache that cannot be written (read-only, full, not a directory) costs a
warning, once per cache, never the built code: :meth:`get_or_build` returns it.

With a remote tier, a local miss asks the server (an entry found there is
checked the same way and kept locally), and what is built or found is
published to it; a server that fails costs a warning and a local compile.
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
from tessera.runtime.remote_cache import RemoteTier, remote_tier

log = logging.getLogger("tessera.cache")

_MAGIC = b"TSRC2\n"
_DIGEST = 32


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class CompileCache:
    def __init__(self, root: str | os.PathLike[str], remote: RemoteTier | None = None):
        self.root = Path(root)
        self.remote = remote
        self.hits = 0
        self.misses = 0
        self.remote_hits = 0
        self.write_errors = 0

    @classmethod
    def default(cls, options: RuntimeOptions | None = None) -> CompileCache | None:
        """The cache under ``RuntimeOptions.cache_dir`` with the tier of
        ``RuntimeOptions.remote_cache``, or None when caching is off."""
        options = options or RuntimeOptions()
        if options.cache_dir is None:
            return None
        return cls(options.cache_dir, remote_tier(options.remote_cache) if options.remote_cache else None)

    def __repr__(self) -> str:
        return f"CompileCache({str(self.root)!r}" + (f", {self.remote!r})" if self.remote else ")")

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.tsa"

    # -- entries as bytes -----------------------------------------------------------------
    def get_bytes(self, key: str) -> bytes | None:
        """The payload stored under ``key`` here, else on the remote tier (then kept
        here too), or None if it is missing, truncated, corrupt or foreign."""
        try:
            payload = _unframe(key, self.path(key).read_bytes())
        except OSError:
            payload = None
        if payload is not None or self.remote is None:
            return payload
        blob = self.remote.get(key)
        if blob is None:
            return None
        payload = _unframe(key, blob)
        if payload is None:
            log.warning("tessera: remote cache %s returned a corrupt entry for %s...: rebuilding it",
                        self.remote.url, key[:16])
            return None
        self.remote_hits += 1
        self._write(key, blob)
        return payload

    def put_bytes(self, key: str, payload: bytes) -> None:
        """Stores ``payload`` under ``key`` here and on the remote tier; a cache that
        cannot be written costs a warning (once per cache), never an error."""
        blob = _frame(key, payload)
        self._write(key, blob)
        if self.remote is not None:
            self.remote.put(key, blob)

    def _write(self, key: str, blob: bytes) -> None:
        try:
            _write_atomically(self.path(key), blob)
        except OSError as e:
            if str(self.root) not in _warned:
                _warned.add(str(self.root))
                log.warning("tessera: compile cache %s cannot be written (%s): built code is used uncached",
                            self.root, e.strerror or e)
            self.write_errors += 1

    # -- artifacts --------------------------------------------------------------------------
    def get(self, key: str) -> Artifact | None:
        """The artifact stored under ``key``, or None (missing, corrupt, foreign)."""
        payload = self.get_bytes(key)
        if payload is None:
            return None
        try:
            return Artifact.from_bytes(payload)
        except ValueError:
            return None

    def put(self, key: str, artifact: Artifact) -> Path:
        """Stores ``artifact`` (raises ``OSError`` where the directory cannot be written)."""
        blob = _frame(key, artifact.to_bytes())
        _write_atomically(self.path(key), blob)
        if self.remote is not None:
            self.remote.put(key, blob)
        return self.path(key)

    def get_or_build(self, key: str, build: Callable[[], Artifact]) -> Artifact:
        found = self.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        artifact = build()
        self.put_bytes(key, artifact.to_bytes())
        return artifact


def _frame(key: str, payload: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(key.encode() + payload).digest() + payload


def _unframe(key: str, blob: bytes) -> bytes | None:
    """The payload of an entry framed for ``key``, or None (not an entry, damaged, another key's)."""
    head = len(_MAGIC) + _DIGEST
    if len(blob) < head or not blob.startswith(_MAGIC):
        return None
    payload = blob[head:]
    if hashlib.sha256(key.encode() + payload).digest() != blob[len(_MAGIC):head]:
        return None
    return payload


def _write_atomically(dest: Path, blob: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.stem[:16]}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_warned: set[str] = set()
"""The cache roots already warned about in this process."""
