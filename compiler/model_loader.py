"""Loading a MODEL.py: a Python file whose ``example()`` returns
``(module_or_fn, args)``. Every way it can go wrong is a :class:`ModelLoadError`
pointing into the file.

    def example():
        return ResBlock(64), (torch.randn(1, 64, 32, 32),)
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import Location, ModelLoadError


def _raised_at(path: Path, e: BaseException) -> Location:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename) == path]
    if frames:
        return Location(str(path), frames[-1].lineno or 0, (frames[-1].colno or 0) + 1)
    return Location(str(path))


def load_example(path_str: str, factory: str = "example") -> tuple[Callable, tuple[Any, ...]]:
    """``factory()`` of the model file (default ``example``): ``(module_or_fn, args)``."""
    path = Path(path_str).resolve()
    if not path.is_file():
        raise ModelLoadError(f"no such model file '{path_str}'", Location(path_str))
    spec = importlib.util.spec_from_file_location(f"tessera_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ModelLoadError("not a loadable Python file", Location(path_str))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ModelLoadError(f"syntax error: {e.msg}", Location(path_str, e.lineno or 0, e.offset or 0)) from None
    except Exception as e:  # noqa: BLE001 - the user's file raised
        raise ModelLoadError(f"loading the model raised {type(e).__name__}: {e}", _raised_at(path, e)) from None
    example = getattr(module, factory, None)
    if not callable(example):
        raise ModelLoadError(
            f"the model file defines no {factory}() returning (module_or_fn, args)", Location(path_str, 1, 1)
        )
    try:
        got = example()
    except Exception as e:  # noqa: BLE001
        raise ModelLoadError(f"{factory}() raised {type(e).__name__}: {e}", _raised_at(path, e)) from None
    if not (isinstance(got, tuple) and len(got) == 2 and callable(got[0]) and isinstance(got[1], (tuple, list))):
        raise ModelLoadError(f"{factory}() must return (module_or_fn, args) with args a tuple", Location(path_str, 1, 1))
    return got[0], tuple(got[1])
