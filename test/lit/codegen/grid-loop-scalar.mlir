// A grid point with a loop of its own (a row of 32 elements of an NCHW tensor)
// keeps LLVM's loop vectorizer off the walk over grid points: LLVM unrolls the
// row fully and would otherwise widen the walk over rows, with a gather and a
// scatter per element (a BatchNorm backward ran 3-6x slower). The row's own
// loads and stores are vectors; a kernel whose grid is the whole tensor (no
// inner loop) still has its walk widened (LLVM marks that loop isvectorized).
// The features are named: the host's own (AVX2 only on some) would widen by 8.
// RUN: compilerctl translate %s --target x86 --features +avx512f,+avx512vl,+avx512bw,+avx512dq --emit llvm | filecheck %s
// RUN: compilerctl translate %s --target x86 --features +avx512f,+avx512vl,+avx512bw,+avx512dq --emit asm | filecheck %s --check-prefix=ASM

// CHECK-LABEL: define void @rows(
// CHECK-NOT: llvm.loop.isvectorized
// CHECK: br i1 {{.*}}, !llvm.loop [[LOOP:![0-9]+]]
// CHECK-LABEL: define void @points(
// CHECK: <16 x float>
// CHECK: br i1 {{.*}}, !llvm.loop [[WIDE:![0-9]+]]
// CHECK: [[LOOP]] = distinct !{[[LOOP]], [[OFF:![0-9]+]]}
// CHECK: [[OFF]] = !{!"llvm.loop.vectorize.enable", i1 false}
// CHECK: [[WIDE]] = distinct !{[[WIDE]], [[VEC:![0-9]+]]
// CHECK: [[VEC]] = !{!"llvm.loop.isvectorized", i32 1}

// ASM-LABEL: rows:
// ASM-NOT: gather
// ASM-NOT: scatter
// ASM: vmovups {{.*}}zmm
// ASM-LABEL: points:
// ASM: zmm

func.func @rows(%in0: memref<512x1024xf32>, %in1: memref<8x64x32x32xf32>, %in2: memref<f32>, %out0: memref<8x64x32x32xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 3>} {
  %0 = arith.constant 8 : index
  %1 = arith.constant 64 : index
  %2 = arith.constant 32 : index
  %3 = arith.constant 0 : index
  %4 = arith.constant 0.000000e+00 : f32
  %5 = arith.constant 1 : index
  "scf.parallel"(%3, %3, %3, %0, %1, %2, %5, %5, %5) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%6: index, %7: index, %8: index):
    scf.for %9 = %3 to %2 step %5 {
      %10 = memref.load %in1[%6, %7, %8, %9] : memref<8x64x32x32xf32>
      %11 = arith.cmpf ole, %10, %4 : f32
      %12 = memref.load %in2[] : memref<f32>
      %13 = arith.muli %6, %1 : index
      %14 = arith.addi %13, %7 : index
      %15 = arith.muli %8, %2 : index
      %16 = arith.addi %15, %9 : index
      %17 = memref.load %in0[%14, %16] : memref<512x1024xf32>
      %18 = arith.select %11, %12, %17 : f32
      memref.store %18, %out0[%6, %7, %8, %9] : memref<8x64x32x32xf32>
    }
    scf.reduce
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  func.return
}

func.func @points(%in0: memref<64x1024xf32>, %out0: memref<64x1024xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
  %0 = arith.constant 0 : index
  %1 = arith.constant 1 : index
  %2 = arith.constant 64 : index
  %3 = arith.constant 1024 : index
  %4 = arith.constant 0.000000e+00 : f32
  "scf.parallel"(%0, %0, %2, %3, %1, %1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %x = memref.load %in0[%i, %j] : memref<64x1024xf32>
    %y = arith.maximumf %x, %4 : f32
    memref.store %y, %out0[%i, %j] : memref<64x1024xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
