"""The arithmetic of a convolution's sizes, with no IR: the ``tsr.conv``
verifier, the x86 conv kernel's spec and the library call's per-call checks
share it (the last runs where no IR is loaded).

    conv_output_size(32, kernel=3, stride=2, padding=1)    # 16
    is_one_gemm(kernel=(1, 1), stride=(1, 1), padding=(0, 0), groups=1)    # True
"""

from __future__ import annotations

from collections.abc import Sequence


def conv_output_size(n: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    """The output length of a convolution over an input of length ``n`` (below 1: the kernel does not fit)."""
    return (n + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def is_one_gemm(kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int], groups: int) -> bool:
    """Whether a conv is one GEMM over its pixels, ``y[NHW, C_out] = x[NHW, C_in] @ w^T``:
    dense (one group), 1x1 (1x1x1), stride 1, unpadded. Its forward on the plain weight
    (``library_calls.pointwise_gemm``), its backward (``conv_backward.pointwise_backward``)
    and the x86 kernel's per-size choice (``conv.host``) take it as such."""
    return groups == 1 and all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(padding)
