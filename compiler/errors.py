"""Typed errors a user can cause, each carrying a located diagnostic.

    model.mlir:3:8: error: 'tsr.relayout': result has shape [1, 8], expected [8, 1]

Tools print ``str(err)`` and exit with status 1; no traceback reaches a user.
"""

from __future__ import annotations

from tessera.dialects.diagnostics import Location, TesseraError

__all__ = ["Location", "TesseraError", "ParseError", "VerificationError", "UnknownPassError", "ModelLoadError",
           "ImportFailure", "UnsupportedStage"]


class ParseError(TesseraError):
    """The IR text does not parse."""


class VerificationError(TesseraError):
    """An op or attribute fails its verifier."""


class UnknownPassError(TesseraError):
    """A pass name (or pipeline name) that is not registered."""


class ModelLoadError(TesseraError):
    """A MODEL.py file that cannot be loaded or has no usable ``example()``."""


class ImportFailure(TesseraError):
    """An FX graph that cannot be imported at all (not even as ATen calls)."""


class UnsupportedStage(TesseraError):
    """A pipeline stage that this target does not provide (yet)."""
