"""Exact u8·s8 / s8·s8 int8 GEMM for x86: AVX-512 VNNI, AVX-VNNI and AVX2.

    from tessera.compiler.targets.x86.int8_gemm import int8_mm, pack_b, select_isa
    w = pack_b(weight_int8, select_isa())                 # once, for a frozen weight [K, N]
    y = int8_mm(x_u8, w, a_scale=sx, b_scale=sw, bias=b)  # float32 [M, N]
    c = int8_mm(x_s8, weight_int8)                         # exact int32, like torch._int_mm

Modules: ``spec`` (what a kernel computes), ``isa`` (the three instruction
paths and host selection), ``packing`` (B's VNNI layout, packed with torch),
``pack_kernel`` (the same packing as a kernel), ``microkernel`` (the register
tile), ``epilogue`` (int32 or scaled float stores), ``gemm`` (grid, blocking,
kernel ABI), ``build`` (LLVM IR / assembly / artifact), ``api`` (``int8_mm``).
``python -m tessera.compiler.targets.x86.int8_gemm --isa avx2 --emit asm`` prints
a kernel's assembly on any host.
"""

from __future__ import annotations

from tessera.compiler.lazy_exports import lazy_exports

_EXPORTS = {
    "int8_mm": "api", "load_int8_gemm": "api", "pack_b_kernel": "api",
    "build_int8_gemm": "build", "int8_gemm_assembly": "build", "int8_gemm_llvm_ir": "build",
    "Int8GemmError": "errors", "InvalidSpec": "errors", "IsaUnavailable": "errors", "OperandMismatch": "errors",
    "UnknownIsa": "errors", "can_run": "isa", "get_isa": "isa", "select_isa": "isa",
    "build_pack_kernel": "pack_kernel", "PackedB": "packing", "pack_b": "packing",
    "EPILOGUES": "spec", "ISAS": "spec", "Int8GemmSpec": "spec",
}
"""Names imported on first use, so that ``int8_gemm.isa`` loads without torch
(``api`` and ``packing`` need it; the passes' ``gemm_choice`` does not)."""

__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
