"""Runtime options, read from the environment once, when created.

    RuntimeOptions()                           # TESSERA_CACHE_DIR or ~/.cache/tessera
    RuntimeOptions(cache_dir=None)             # no on-disk cache
    RuntimeOptions(num_threads=1)              # every kernel on the calling thread
    RuntimeOptions(remote_cache="redis://127.0.0.1:6379/0")   # or TESSERA_REMOTE_CACHE: a fleet's cache
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tessera.runtime.errors import InvalidOption

CACHE_DIR_ENV = "TESSERA_CACHE_DIR"
REMOTE_CACHE_ENV = "TESSERA_REMOTE_CACHE"


def _default_cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tessera"


def _default_remote_cache() -> str | None:
    return os.environ.get(REMOTE_CACHE_ENV) or None


def _default_threads() -> int:
    import torch

    return max(1, torch.get_num_threads())


@dataclass(frozen=True)
class RuntimeOptions:
    cache_dir: Path | None = field(default_factory=_default_cache_dir)
    remote_cache: str | None = field(default_factory=_default_remote_cache)
    """A Redis server's URL (``redis://host:port/db``): the cache's tier after the local
    directory, shared by a fleet (``runtime/remote_cache.py``); ``None``: local only."""
    num_threads: int = field(default_factory=_default_threads)
    """Workers that CPU kernels are split across (torch's intra-op thread count)."""
    min_work_per_thread: int = 32768
    """Elements (summed over a kernel's buffers) below which a thread is not worth waking."""

    def __post_init__(self) -> None:
        if self.num_threads < 1:
            raise InvalidOption(f"num_threads must be >= 1, got {self.num_threads}")
        if self.min_work_per_thread < 1:
            raise InvalidOption(f"min_work_per_thread must be >= 1, got {self.min_work_per_thread}")
