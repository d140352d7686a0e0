"""The kernels tessera generates for library ops of the host graph, as LLVM IR
beside the fused kernels (stages ``llvm``/``asm``/``obj``): every kernel the host
program launches besides the fused ones, so ``compilerctl dump`` shows them all.

    %y = tsr.scaled_int_mm %x, %w, %xs, %ws, %b {tsr.impl = "avx512vnni"} : (tensor<32x64xui8>, tensor<64x16xi8>, ...) -> tensor<32x16xf32>
    // -> define void @int8_gemm_u8s8_avx512vnni_scale_bias_32x16x64(ptr %a, ptr %b_packed, ..., i64 %lo, i64 %hi)
    //    define void @int8_pack_b_avx512vnni_u8_64x16(...)            (B into the GEMM's blocked layout)
    %y = tsr.conv %x, %w {..., tsr.impl = "avx512"} : (...) -> ...
    // -> define void @conv2d_avx512_n1_48to8_9x9_k1x1(...)
    //    define void @conv_pack_avx512_48to8_k1x1_g1_nr16(...)        (the weight into the kernel's blocks)
    %y = tsr.conv %x, %w {..., tsr.impl = "avx512:winograd4"} : (...) -> ...
    // -> define void @winograd4_in_conv2d_avx512_n1_64to64_56x56_k3x3_p1x1(...)   (V = B^T d B per tile)
    //    define void @conv2d_avx512_n1_2304to2304_1x196_k1x1_g36(...)     (the GEMM per point, and its pack)
    //    define void @winograd4_out_conv2d_avx512_n1_64to64_56x56_k3x3_p1x1(...)  (y = A^T M A, epilogue)

Each op gets the path ``select-impl`` recorded (``tsr.impl``), an int8 GEMM
with the kernel that packs its B. The specs are those the host program builds
when it first runs the op.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import ModuleOp, i8

from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.conv.kernel import conv_module
from tessera.compiler.targets.x86.conv.pack_kernel import pack_kernel_name
from tessera.compiler.targets.x86.conv.pack_kernel import pack_module as conv_pack_module
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.int8_gemm.gemm import gemm_module
from tessera.compiler.targets.x86.int8_gemm.pack_kernel import pack_module
from tessera.compiler.targets.x86.int8_gemm.spec import Int8GemmSpec
from tessera.dialects import tsr
from tessera.dialects.tsr.shapes import elem_of, is_static, shape_of
from tessera.passes.select_impl import impl_of


def int8_gemm_specs(host: ModuleOp) -> list[Int8GemmSpec]:
    """One spec per distinct int8 GEMM of ``host`` that tessera's kernel computes (``tsr.impl``), in program order."""
    specs: dict[Int8GemmSpec, None] = {}
    for op in host.walk():
        if isinstance(op, (tsr.IntMmOp, tsr.ScaledIntMmOp)) and (isa := impl_of(op)) is not None:
            (m, k), n = shape_of(op.lhs.type), shape_of(op.rhs.type)[1]
            epilogue = "s32" if isinstance(op, tsr.IntMmOp) else ("scale_bias" if op.bias is not None else "scale")
            specs[Int8GemmSpec(m, n, k, a_signed=elem_of(op.lhs.type) == i8, isa=isa, epilogue=epilogue)] = None
    return list(specs)


def conv_specs(host: ModuleOp) -> list[tuple[ConvSpec, int | None]]:
    """One ``(spec, m)`` per distinct conv of ``host`` that tessera's kernels compute
    (``tsr.impl``: ``m`` of Winograd F(m x m, 3 x 3), or None), of static sizes (a conv of
    dynamic sizes builds a kernel per size when run: ``conv/sized.py``)."""
    from .conv_choice import conv_spec, split_impl

    specs: dict[tuple[ConvSpec, int | None], None] = {}
    for op in host.walk():
        if isinstance(op, tsr.ConvOp) and (impl := impl_of(op)) is not None and is_static(shape_of(op.input.type)):
            isa, m = split_impl(impl)
            specs[(conv_spec(op, isa), m)] = None
    return list(specs)


def _conv_modules(spec: ConvSpec, m: int | None, target: LlvmTarget) -> tuple[list[ir.Module], ConvSpec]:
    """A conv's kernel modules, and the spec whose weight packing it runs: a Winograd
    conv's transforms (of a 3-D conv: over its frames as planes) and its GEMM (a grouped conv)."""
    if m is None:
        from .conv.rows import rows_spec

        return [conv_module(rows_spec(spec), target)], spec
    from .conv.winograd_kernels import input_module, output_module
    from .conv.winograd_spec import WinogradSpec

    ws = WinogradSpec(spec, m)
    return ([input_module(ws.input_planes, target), conv_module(ws.gemm, target),
             output_module(ws.output_planes, target)], ws.gemm)


def library_kernel_modules(host: ModuleOp, target: LlvmTarget) -> list[ir.Module]:
    """LLVM modules of the kernels of ``host``'s library ops for ``target``: its convs
    and int8 GEMMs on tessera's kernels, with the kernels that pack their weights."""
    modules, packs = [], {}
    for spec, m in conv_specs(host):
        kernels, packed = _conv_modules(spec, m, target)
        modules += kernels
        packs[pack_kernel_name(packed)] = packed
    modules += [conv_pack_module(spec, target) for spec in packs.values()]
    gemms = int8_gemm_specs(host)
    packs = {(g.K, g.N, g.isa, g.a_signed): None for g in gemms}
    return (modules + [gemm_module(spec, target) for spec in gemms]
            + [pack_module(*key, target) for key in packs])
