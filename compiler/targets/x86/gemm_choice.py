"""Which int8 GEMM tessera's x86 kernel computes, and on which instruction path:
the x86 target's ``own_gemm_kernel`` model, asked by ``select-impl`` (which
records the answer on the op).

    %c = tsr.int_mm %a, %b : (tensor<32x64xui8>, tensor<64x16xi8>) -> tensor<32x16xi32>
    gemm_isa(op, "+avx512vnni")    # "avx512vnni": vpdpbusd on zmm
    gemm_isa(op, "+avx2,+avxvnni") # "avxvnni"
    gemm_isa(op, "+avx2")          # "avx2": vpmaddwd
    gemm_isa(op, "+sse4.2")        # None: ATen's int8 GEMM computes it
    gemm_isa(op, None)             # this host's fastest path, or None

Every int8 GEMM (u8 or s8 A, s8 B, int32 or scaled f32 result) takes the
fastest path the features allow; each is exact. ``bench/int8_gemm.py``
measured the kernel ahead of ATen's ``_int_mm`` at the skinny shapes of a
quantized linear (64x4096x4096: 2x) and behind it at 1024^3 where ATen
uses AMX (BENCHMARKS.md); no per-shape model is built yet.
Imports no torch, so the IR tools run ``select-impl`` without it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .codegen import enabled_features
from .int8_gemm.errors import IsaUnavailable
from .int8_gemm.isa import select_isa

if TYPE_CHECKING:
    from xdsl.ir import Operation


@functools.cache
def host_gemm_isa() -> str | None:
    """The fastest int8 GEMM path this CPU runs (read once), or None."""
    try:
        return select_isa()
    except IsaUnavailable:
        return None


def gemm_isa(op: Operation, features: str | None = None) -> str | None:
    """The path on which tessera's kernel computes the int8 GEMM ``op`` for
    ``features`` (``None``: this host's), or None where the library should."""
    if not features:
        return host_gemm_isa()
    try:
        return select_isa(enabled_features(features))
    except IsaUnavailable:
        return None
