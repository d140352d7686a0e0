"""Located diagnostics: the base of every error tessera reports to a user.

    model.mlir:3:8: error: 'tsr.relayout': result has shape [1, 8], expected [8, 1]

It lives in the lowest layer so that dialect verifiers, passes and the compiler
raise the same kind of error; tools print ``str(err)`` and exit with status 1.
(The runtime, which knows no IR, has its own base: ``runtime/errors.py``.)
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
