// tessera's fp32 conv kernel (compiler/targets/x86/conv): the inner loop over input
// channels is broadcast-input x weight-vector FMAs on the host-independent
// feature sets (assembly only: nothing runs). AVX-512 uses zmm registers, the
// AVX2 build ymm and never a zmm.

// RUN: %python -m tessera.compiler.targets.x86.conv --features +avx512f --emit asm | filecheck %s --check-prefix=ZMM
// ZMM-LABEL: conv2d_avx512_n1_20to40_9x13_k3x3_p1x1:
// ZMM: {{^\.LBB[0-9]+_[0-9]+}}: {{.*}}# %ci
// ZMM: This Inner Loop Header
// ZMM-NOT: {{^\.LBB}}
// ZMM: vbroadcastss {{.*}}, %zmm[[X:[0-9]+]]
// ZMM-NOT: {{^\.LBB}}
// ZMM: vfmadd{{(231|213|132)}}ps {{.*}}%zmm[[X]]{{.*}}%zmm{{[0-9]+}}
// ZMM-NOT: {{^\.LBB}}
// ZMM: vfmadd{{(231|213|132)}}ps %zmm{{[0-9]+}}, %zmm{{[0-9]+}}, %zmm{{[0-9]+}}

// RUN: %python -m tessera.compiler.targets.x86.conv --features +avx2,+fma --emit asm > %t.avx2.s
// RUN: filecheck %s --check-prefix=YMM --input-file %t.avx2.s
// RUN: not grep zmm %t.avx2.s
// YMM-LABEL: conv2d_avx2_n1_20to40_9x13_k3x3_p1x1:
// YMM: {{^\.LBB[0-9]+_[0-9]+}}: {{.*}}# %ci
// YMM: This Inner Loop Header
// YMM-NOT: {{^\.LBB}}
// YMM: vbroadcastss {{.*}}, %ymm{{[0-9]+}}
// YMM-NOT: {{^\.LBB}}
// YMM: vfmadd{{(231|213|132)}}ps %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}

// A 3-D depthwise conv with the SiLU epilogue: vector FMAs over channels, and the
// activation's inline exp expansion vectorized (no call into libm).
// RUN: %python -m tessera.compiler.targets.x86.conv --features +avx512f --shape 1x32x3x6x9 --out-channels 32 --kernel 3x3x3 --groups 32 --activation silu --emit asm > %t.dw.s
// RUN: filecheck %s --check-prefix=DW --input-file %t.dw.s
// RUN: not grep -E "call.*exp" %t.dw.s
// DW-LABEL: conv3d_avx512_n1_32to32_3x6x9_k3x3x3_p1x1x1_g32_silu:
// DW: vfmadd{{(231|213|132)}}ps {{.*}}%zmm{{[0-9]+}}
// DW: vdivps {{.*}}%zmm

// Bad input: a diagnostic and exit status 1, no traceback.
// RUN: not %python -m tessera.compiler.targets.x86.conv --features +sse4.2 2>&1 | filecheck %s --check-prefix=ERR
// ERR: enable neither +avx512f nor +avx2,+fma
// ERR-NOT: Traceback
