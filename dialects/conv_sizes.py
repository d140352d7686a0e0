"""The arithmetic of a convolution's sizes, with no IR: the ``tsr.conv``
verifier, the x86 conv kernel's spec and the library call's per-call checks
share it (the last runs where no IR is loaded).

    conv_output_size(32, kernel=3, stride=2, padding=1)    # 16
"""

from __future__ import annotations


def conv_output_size(n: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    """The output length of a convolution over an input of length ``n`` (below 1: the kernel does not fit)."""
    return (n + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
