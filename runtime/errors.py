"""Typed errors of the runtime.

    error: kernel @fused_0 argument #1: strides (32, 1) != expected (1, 8)
"""

from __future__ import annotations


class TesseraRuntimeError(Exception):
    """Base of the runtime's errors (the runtime knows neither IR nor compiler: its errors
    carry a message and no source location)."""

    location = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"error: {self.message}"


class UnsupportedDevice(TesseraRuntimeError):
    """A device this build of tessera cannot run kernels on (yet)."""


class SignatureMismatch(TesseraRuntimeError):
    """Tensors that do not match a kernel's signature (count, shape, strides, dtype, device, aliasing)."""


class KernelNotFound(TesseraRuntimeError):
    """A kernel name that a loaded module does not have."""


class LoadError(TesseraRuntimeError):
    """An artifact that cannot be loaded on this device (wrong target/kind, CPU lacks features, bad object)."""


class ProgramError(TesseraRuntimeError):
    """A malformed program (a buffer used before it is defined) or wrong inputs to it."""


class InvalidOption(TesseraRuntimeError):
    """A runtime option out of its range."""


class SizesChanged(TesseraRuntimeError):
    """A program bound to one run's sizes (``runtime/size_binding.py``) met other sizes."""
