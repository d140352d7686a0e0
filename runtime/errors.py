"""Typed errors of the runtime.

    error: kernel @fused_0 argument #1: strides (32, 1) != expected (1, 8)
"""

from __future__ import annotations

from tessera.compiler.errors import TesseraError


class UnsupportedDevice(TesseraError):
    """A device this build of tessera cannot run kernels on (yet)."""


class SignatureMismatch(TesseraError):
    """Tensors that do not match a kernel's signature (count, shape, strides, dtype, device, aliasing)."""


class KernelNotFound(TesseraError):
    """A kernel name that a loaded module does not have."""


class LoadError(TesseraError):
    """An artifact that cannot be loaded on this device (wrong target/kind, CPU lacks features, bad object)."""


class ProgramError(TesseraError):
    """A malformed program (a buffer used before it is defined) or wrong inputs to it."""


class InvalidOption(TesseraError):
    """A runtime option out of its range."""
