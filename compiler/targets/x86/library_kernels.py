"""The kernels tessera generates for library ops of the host graph, as LLVM IR
beside the fused kernels (stages ``llvm``/``asm``/``obj``).

    %y = tsr.scaled_int_mm %x, %w, %xs, %ws, %b : (tensor<32x64xui8>, tensor<64x16xi8>, ...) -> tensor<32x16xf32>
    // -> define void @int8_gemm_u8s8_avx512vnni_scale_bias_32x16x64(ptr %a, ptr %b_packed, ..., i64 %lo, i64 %hi)

The int8 GEMMs (``tsr.int_mm``, ``tsr.scaled_int_mm``) get the fastest path the
target's features allow (``+avx512vnni``: ``vpdpbusd`` on zmm); the same spec
that the runtime builds when the host program first runs the op.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import ModuleOp, i8

from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.codegen import enabled_features
from tessera.compiler.targets.x86.int8_gemm import Int8GemmSpec, IsaUnavailable, select_isa
from tessera.compiler.targets.x86.int8_gemm.gemm import gemm_module
from tessera.dialects import tsr
from tessera.dialects.tsr.shapes import elem_of, shape_of


def int8_gemm_specs(host: ModuleOp, isa: str) -> list[Int8GemmSpec]:
    """One spec per distinct int8 GEMM of ``host``, in program order."""
    specs: dict[Int8GemmSpec, None] = {}
    for op in host.walk():
        if isinstance(op, (tsr.IntMmOp, tsr.ScaledIntMmOp)):
            (m, k), n = shape_of(op.lhs.type), shape_of(op.rhs.type)[1]
            epilogue = "s32" if isinstance(op, tsr.IntMmOp) else ("scale_bias" if op.bias is not None else "scale")
            specs[Int8GemmSpec(m, n, k, a_signed=elem_of(op.lhs.type) == i8, isa=isa, epilogue=epilogue)] = None
    return list(specs)


def library_kernel_modules(host: ModuleOp, target: LlvmTarget) -> list[ir.Module]:
    """LLVM modules of the library-op kernels of ``host`` for ``target`` (none where
    the features allow no int8 path)."""
    try:
        isa = select_isa(enabled_features(target.features))
    except IsaUnavailable:
        return []
    return [gemm_module(spec, target) for spec in int8_gemm_specs(host, isa)]
