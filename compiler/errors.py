"""Typed errors a user can cause, each carrying a located diagnostic.

    model.mlir:3:8: error: 'tsr.relayout': result has shape [1, 8], expected [8, 1]

Tools print ``str(err)`` and exit with status 1; no traceback reaches a user.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}" if self.line else self.file


class TesseraError(Exception):
    """Base of every error tessera reports to a user."""

    def __init__(self, message: str, location: Location | None = None, context: str = ""):
        super().__init__(message)
        self.message = message
        self.location = location
        self.context = context

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        tail = f"\n{self.context}" if self.context else ""
        return f"{where}error: {self.message}{tail}"


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
