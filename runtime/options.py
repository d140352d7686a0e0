"""Runtime options, read from the environment once, when created.

    RuntimeOptions()                           # TESSERA_CACHE_DIR or ~/.cache/tessera
    RuntimeOptions(cache_dir=None)             # no on-disk cache
    RuntimeOptions(num_threads=1)              # every kernel on the calling thread
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tessera.runtime.errors import InvalidOption

CACHE_DIR_ENV = "TESSERA_CACHE_DIR"


def _default_cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tessera"


def _default_threads() -> int:
    import torch

    return max(1, torch.get_num_threads())


@dataclass(frozen=True)
class RuntimeOptions:
    cache_dir: Path | None = field(default_factory=_default_cache_dir)
    num_threads: int = field(default_factory=_default_threads)
    """Workers that CPU kernels are split across (torch's intra-op thread count)."""
    min_work_per_thread: int = 32768
    """Elements (summed over a kernel's buffers) below which a thread is not worth waking."""

    def __post_init__(self) -> None:
        if self.num_threads < 1:
            raise InvalidOption(f"num_threads must be >= 1, got {self.num_threads}")
        if self.min_work_per_thread < 1:
            raise InvalidOption(f"min_work_per_thread must be >= 1, got {self.min_work_per_thread}")
