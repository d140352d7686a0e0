// The int8 GEMM's inner K loop uses each path's instruction, on any host
// (assembly only: nothing runs). Operand order is AT&T: for u8 A the broadcast
// of A is the unsigned (middle) operand of vpdpbusd; for s8 A it is the signed
// (first) one, B being packed as b + 128.

// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avx512vnni --emit asm | filecheck %s --check-prefix=ZMM
// ZMM-LABEL: int8_gemm_u8s8_avx512vnni_s32_37x61x129:
// ZMM: [[LOOP:\.LBB[0-9]+_[0-9]+]]: {{.*}}# %kloop
// ZMM: This Inner Loop Header
// ZMM-NOT: {{^\.LBB}}
// ZMM: vpbroadcastd {{.*}}, %zmm[[A:[0-9]+]]
// ZMM-NEXT: vpdpbusd %zmm{{[0-9]+}}, %zmm[[A]], %zmm{{[0-9]+}}
// ZMM-NOT: {{^\.LBB}}
// ZMM: j{{[a-z]+}} [[LOOP]]

// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avx512vnni --signed --emit asm | filecheck %s --check-prefix=ZMM-S8
// ZMM-S8-LABEL: int8_gemm_s8s8_avx512vnni_s32_37x61x129:
// ZMM-S8: [[LOOP:\.LBB[0-9]+_[0-9]+]]: {{.*}}# %kloop
// ZMM-S8: This Inner Loop Header
// ZMM-S8-NOT: {{^\.LBB}}
// ZMM-S8: vpbroadcastd {{.*}}, %zmm[[A:[0-9]+]]
// ZMM-S8-NEXT: vpdpbusd %zmm[[A]], %zmm{{[0-9]+}}, %zmm{{[0-9]+}}
// ZMM-S8-NOT: {{^\.LBB}}
// ZMM-S8: j{{[a-z]+}} [[LOOP]]

// The AVX-VNNI path: the VEX encoding on ymm, no zmm anywhere.
// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avxvnni --emit asm | filecheck %s --check-prefix=YMM
// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avxvnni --emit asm | not grep zmm
// YMM-LABEL: int8_gemm_u8s8_avxvnni_s32_37x61x129:
// YMM: [[LOOP:\.LBB[0-9]+_[0-9]+]]: {{.*}}# %kloop
// YMM: This Inner Loop Header
// YMM-NOT: {{^\.LBB}}
// YMM: {vex} vpdpbusd %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}
// YMM-NOT: {{^\.LBB}}
// YMM: j{{[a-z]+}} [[LOOP]]

// The AVX2 path: widened bytes and vpmaddwd, never vpdpbusd nor the saturating vpmaddubsw.
// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avx2 --emit asm | filecheck %s --check-prefix=AVX2
// RUN: %python -m tessera.compiler.targets.x86.int8_gemm --isa avx2 --emit asm | not grep -E "vpdpbusd|vpmaddubsw|zmm"
// AVX2-LABEL: int8_gemm_u8s8_avx2_s32_37x61x129:
// AVX2: [[LOOP:\.LBB[0-9]+_[0-9]+]]: {{.*}}# %kloop
// AVX2: This Inner Loop Header
// AVX2-NOT: {{^\.LBB}}
// AVX2: vpmovsxbw {{.*}}, %ymm
// AVX2-NOT: {{^\.LBB}}
// AVX2: vpmovzxbw %xmm{{[0-9]+}}, %ymm
// AVX2-NOT: {{^\.LBB}}
// AVX2: vpmaddwd %ymm{{[0-9]+}}, %ymm{{[0-9]+}}, %ymm{{[0-9]+}}
// AVX2-NOT: {{^\.LBB}}
// AVX2: vpaddd
// AVX2-NOT: {{^\.LBB}}
// AVX2: j{{[a-z]+}} [[LOOP]]

// A feature string without the path's instructions is a diagnostic, not an LLVM abort.
// RUN: not %python -m tessera.compiler.targets.x86.int8_gemm --isa avx512vnni --features +avx2 2>&1 | filecheck %s --check-prefix=BAD
// BAD: error: isa 'avx512vnni' needs +avx512f, +avx512vnni in the target features '+avx2'
