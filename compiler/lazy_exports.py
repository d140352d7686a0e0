"""A package's names imported from its submodules on first use (PEP 562), so
that importing one light submodule does not load the heavy ones (torch).

    _EXPORTS = {"int8_mm": "api", "select_isa": "isa"}
    __getattr__ = lazy_exports(__name__, _EXPORTS)
    __all__ = sorted(_EXPORTS)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` from ``package.<exports[name]>``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
