"""Typed errors of the int8 GEMM generator and its ``int8_mm`` entry point.

    error: isa 'avx512vnni' needs CPU features this host lacks: avx512vnni
"""

from __future__ import annotations

from tessera.compiler.errors import TesseraError


class Int8GemmError(TesseraError):
    """Base of every user-causable int8 GEMM error."""


class UnknownIsa(Int8GemmError):
    """An instruction path name that is not ``avx512vnni``, ``avxvnni`` or ``avx2``."""


class IsaUnavailable(Int8GemmError):
    """An instruction path the host CPU (or a given feature string) cannot run."""


class InvalidSpec(Int8GemmError):
    """A GEMM description out of range (non-positive sizes, unknown epilogue)."""


class OperandMismatch(Int8GemmError):
    """Tensors (or a packed B) that do not fit the GEMM: dtypes, shapes, packing."""
