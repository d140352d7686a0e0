"""The x86-64 CPU target: AVX2, AVX-512 and VNNI code for the host's features,
with tessera's own conv kernels (``conv/``) and exact int8 GEMMs (``int8_gemm/``).

    compilerctl translate k.mlir --target x86 --emit asm --features +avx2,+fma
"""

from __future__ import annotations

from tessera.passes.target_models import TargetModels

from ..base import CpuTarget
from .codegen import X86_TRIPLE, X86Target


class X86(CpuTarget):
    name = "x86"
    machines = ("x86_64", "amd64")
    llvm_name = "X86"
    transpose_tile = 8
    """8 x 8 tiles, one ymm per row on AVX2 and AVX-512 alike; 16 x 16 tiles were
    1.1x faster only with warm caches in a C test of the ResNet block's relayout
    (BENCHMARKS.md), and not built."""
    reduce_lanes = 16
    """A zmm of f32 (two ymm on AVX2) per reduction grid point, in ``vector`` ops of the kernel IR."""
    row_lanes = 8
    """A ymm of f32 per vector of a pointwise row (``lowering.lower._vector_row``): the static
    sigmoid of 8x144x8x8 NCHW ran 260 -> 48-66 us, relu 39 -> 21-25; equal at NHWC's long rows."""
    merge_rows = True
    """NCHW planes as one row (``lowering.row_dims``), and as one dim of the transpose tiles:
    sigmoid(x * y) of 8x240x4x4 130 -> 22 us static, 75 -> 26 dynamic; a dynamic NCHW -> NHWC
    product of 8x672x4x4 165 -> 34 us (Zen 4, BENCHMARKS.md session 48)."""
    own_conv_kernel_passes = ("addmm-as-conv", "fold-relayouts-into-convs", "fuse-conv-residuals")

    def models(self) -> TargetModels:
        from .conv.rows import row_view
        from .conv_choice import kernel_isa, winograd_over_polyphase
        from .conv_layouts import CONV_BACKWARD_LAYOUTS, CONV_LAYOUTS
        from .gemm_choice import gemm_isa

        return TargetModels(conv_layouts=CONV_LAYOUTS, own_conv_kernel=kernel_isa, own_gemm_kernel=gemm_isa,
                            own_conv_rows=row_view, conv_backward_layouts=CONV_BACKWARD_LAYOUTS,
                            keeps_upsampled_conv=winograd_over_polyphase,
                            library_pools_channels_last=True)

    def widened_halves(self, features: str | None = None) -> tuple[str, ...]:
        """bf16 and f16 convs and GEMMs run in f32 on tessera's kernels unless the CPU
        computes the type faster in the library: with AMX tiles (``amx-bf16``, ``amx-fp16``),
        or bf16 on an AMD core with AVX-512 BF16 (``sse4a`` marks AMD; session 19's Zen 5 ran
        ResNet-50 in oneDNN's bf16 in 26 ms against tessera's 37 in f32, its ``vdpbf16ps`` rate
        not measured). An Intel core without AMX retires a ``vdpbf16ps`` every two cycles,
        half the f32 FMA rate, and oneDNN's bf16 and f16 convs there run at 0.53-0.58x its
        f32 ones (``bench/half_math.py``; BENCHMARKS.md, session 33)."""
        from .codegen import enabled_features

        on = enabled_features(self.codegen(features).features)
        native_bf16 = "amx-bf16" in on or {"avx512bf16", "sse4a"} <= on
        return tuple(d for d, native in (("bf16", native_bf16), ("f16", "amx-fp16" in on)) if not native)

    def codegen(self, features: str | None = None, cpu: str | None = None) -> X86Target:
        return X86Target(features=features, cpu=cpu)

    def codegen_triple(self) -> str:
        return X86_TRIPLE

    def host_call(self, op, freezing: bool = False):
        """A conv or int8 GEMM on tessera's kernel where ``select-impl`` recorded one, else the CPU's library."""
        from tessera.dialects import tsr
        from tessera.passes.select_impl import impl_of

        impl = impl_of(op)
        if impl is not None and isinstance(op, tsr.ConvOp):
            from .conv.host import conv_call

            return conv_call(op, impl, freezing)
        if impl is not None and isinstance(op, (tsr.IntMmOp, tsr.ScaledIntMmOp)):
            from .int8_gemm.host import Int8Gemm

            return Int8Gemm(op, impl, freezing)
        return super().host_call(op, freezing)

    def library_kernel_modules(self, host, codegen) -> list:
        from .library_kernels import library_kernel_modules

        return library_kernel_modules(host, codegen)

    def host_note(self) -> str:
        from tessera.runtime.cpu import host_features

        feats = sorted(f for f in host_features() if f.startswith(("avx", "fma", "amx")))
        return f"host CPU: {', '.join(feats) or 'no AVX'}"
