// The quantized linear layer of examples/int8_linear.py, through the whole
// model path (capture, graph passes, fuse-int-mm-epilogues, kernel, llvm, asm):
// one GEMM kernel with the scale/bias epilogue, on each int8 path, on any host.

// RUN: compilerctl dump %S/../../../examples/int8_linear.py --stage asm --target x86 --features +avx512vnni | filecheck %s --check-prefix=ZMM
// ZMM-LABEL: int8_gemm_u8s8_avx512vnni_scale_bias_32x16x64:
// ZMM: vpdpbusd %zmm{{[0-9]+}}, %zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// The epilogue in the same kernel: int32 -> float, two scales, the bias.
// ZMM: vcvtdq2ps {{.*}}%zmm
// ZMM: vmulps
// ZMM: vmulps
// ZMM: vaddps
// ZMM-NOT: {{^}}fused_

// RUN: compilerctl dump %S/../../../examples/int8_linear.py --stage asm --target x86 --features +avxvnni | filecheck %s --check-prefix=YMM
// YMM-LABEL: int8_gemm_u8s8_avxvnni_scale_bias_32x16x64:
// YMM: {vex} vpdpbusd %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}

// RUN: compilerctl dump %S/../../../examples/int8_linear.py --stage asm --target x86 --features +avx2,+fma | filecheck %s --check-prefix=AVX2
// AVX2-LABEL: int8_gemm_u8s8_avx2_scale_bias_32x16x64:
// AVX2-NOT: vpmaddubsw
// AVX2: vpmaddwd %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}
