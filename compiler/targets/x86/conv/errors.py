"""Typed errors of the channels-last convolution generator and its entry point.

    error: conv kernel stride must be positive ints, got (0, 1)
"""

from __future__ import annotations

from tessera.compiler.errors import TesseraError


class ConvKernelError(TesseraError):
    """Base of every user-causable error of tessera's conv kernels."""


class InvalidConvSpec(ConvKernelError):
    """A convolution description out of range (sizes, groups, epilogue, dtype)."""


class UnknownConvIsa(ConvKernelError):
    """A vector path name that is neither ``avx512`` nor ``avx2``."""


class ConvIsaUnavailable(ConvKernelError):
    """A vector path the host CPU (or a given feature string) cannot run."""


class ConvOperandMismatch(ConvKernelError):
    """Tensors or a packed weight that do not fit the convolution."""
