"""Typed errors of code generation.

    error: kernel @fused_0: 'math.sin' is not supported by the x86 emitter
"""

from __future__ import annotations

from tessera.compiler.errors import TesseraError


class CodegenError(TesseraError):
    """Kernel IR that breaks the kernel IR contract (docs/kernel-ir.md) or uses
    an op the emitter does not lower."""


class UnknownTarget(TesseraError):
    """A target name (or feature string) that no emitter provides."""
