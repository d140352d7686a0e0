// The AArch64 target on a SiLU kernel: the CPU kernel ABI (a [lo, hi) slice of the
// grid, as on x86), the contiguous loop vectorized into NEON (4 x f32 in q registers,
// fmla for exp's polynomial, fdiv), exp expanded inline: no call into a math library.
// With +sve the loop uses SVE instructions (a predicate, predicated FMAs on z registers).

// RUN: compilerctl translate %s --target aarch64 --emit asm | filecheck %s
// RUN: compilerctl translate %s --target aarch64 --emit asm | not grep -E "\bbl\b"
// RUN: compilerctl translate %s --target aarch64 --emit llvm | filecheck %s --check-prefix=LLVM
// RUN: compilerctl translate %s --target aarch64 --emit asm --features +neon,+sve | filecheck %s --check-prefix=SVE
// RUN: not compilerctl translate %s --target aarch64 --emit asm --features +avx2 2>&1 | filecheck %s --check-prefix=BAD

// CHECK: .globl silu
// CHECK: ldr q{{[0-9]+}}, [x{{[0-9]+}}, x{{[0-9]+}}]
// CHECK: fmla v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// CHECK: fdiv v{{[0-9]+}}.4s, v{{[0-9]+}}.4s, v{{[0-9]+}}.4s
// CHECK: str q{{[0-9]+}}, [x{{[0-9]+}}, x{{[0-9]+}}]
// CHECK: ret

// LLVM: target triple = "aarch64-unknown-linux-gnu"
// LLVM: define void @silu(ptr noalias {{.*}}%arg0, ptr noalias {{.*}}%arg1, i64 %lo, i64 %hi)
// LLVM: fdiv <4 x float>

// SVE: ptrue p{{[0-9]}}.s
// SVE: {{fmla|fmls|fnmla|fnmls|fmad|fmsb}} z{{[0-9]+}}.s, p{{[0-9]}}/m

// BAD: error: aarch64 feature string '+avx2': '+avx2' is not one of +neon

builtin.module {
func.func @silu(%x: memref<16x64xf32>, %y: memref<16x64xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g0 = arith.constant 16 : index
  "scf.parallel"(%c0, %g0, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i0: index):

    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    scf.for %j = %c0 to %c64 step %c1 {
      %v = memref.load %x[%i0, %j] : memref<16x64xf32>
      %n = arith.negf %v : f32
      %e = math.exp %n : f32
      %d = arith.addf %e, %one : f32
      %s = arith.divf %v, %d : f32
      memref.store %s, %y[%i0, %j] : memref<16x64xf32>
    }
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
}
