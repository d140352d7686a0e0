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

from tessera.compiler.targets.x86.int8_gemm.api import int8_mm, load_int8_gemm, pack_b_kernel
from tessera.compiler.targets.x86.int8_gemm.build import build_int8_gemm, int8_gemm_assembly, int8_gemm_llvm_ir
from tessera.compiler.targets.x86.int8_gemm.errors import (
    Int8GemmError,
    InvalidSpec,
    IsaUnavailable,
    OperandMismatch,
    UnknownIsa,
)
from tessera.compiler.targets.x86.int8_gemm.isa import can_run, get_isa, select_isa
from tessera.compiler.targets.x86.int8_gemm.pack_kernel import build_pack_kernel
from tessera.compiler.targets.x86.int8_gemm.packing import PackedB, pack_b
from tessera.compiler.targets.x86.int8_gemm.spec import EPILOGUES, ISAS, Int8GemmSpec

__all__ = [
    "EPILOGUES", "ISAS", "Int8GemmError", "Int8GemmSpec", "InvalidSpec", "IsaUnavailable", "OperandMismatch",
    "PackedB", "UnknownIsa", "build_int8_gemm", "build_pack_kernel", "can_run", "get_isa", "int8_gemm_assembly",
    "int8_gemm_llvm_ir", "int8_mm", "load_int8_gemm", "pack_b", "pack_b_kernel", "select_isa",
]
