// A kernel that takes its sizes at run time: dynamic sizes and strides of its
// memrefs (`?`) and a grid of `memref.dim`s. On x86 they come in one more
// pointer, an i64 array after the buffers (each argument's dynamic sizes, then
// its dynamic strides); on NVPTX as i64 parameters, the grid their product; on
// Metal the same array as one more buffer, `constant long*`, read where used.
// RUN: compilerctl translate %s --target x86 --emit llvm | filecheck %s
// RUN: compilerctl translate %s --target ptx --emit ptx | filecheck %s --check-prefix=PTX
// RUN: compilerctl translate %s --target metal --emit msl | filecheck %s --check-prefix=METAL

// METAL-LABEL: kernel void relu_nhwc(
// METAL-NEXT: device const float* in0 {{\[\[}}buffer(0){{\]\]}},
// METAL-NEXT: device float* out0 {{\[\[}}buffer(1){{\]\]}},
// METAL-NEXT: constant long* tsr_dims {{\[\[}}buffer(2){{\]\]}},
// METAL-NEXT: uint tid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// METAL-NEXT: const long tsr_d2 = tsr_dims[2];  // stride 0 of in0
// METAL-NEXT: const long tsr_d3 = tsr_dims[3];  // size 0 of out0
// METAL-NEXT: const long tsr_d4 = tsr_dims[4];  // size 2 of out0
// METAL-NEXT: const long tsr_d5 = tsr_dims[5];  // stride 0 of out0
// METAL-NEXT: const long tsr_d6 = tsr_dims[6];  // stride 1 of out0
// METAL: const long [[W:v[0-9]+]] = tsr_d4;
// METAL: if (static_cast<long>(tid) >= tsr_d3 * 8L) return;
// METAL: for (long [[J:v[0-9]+]] = v{{[0-9]+}}; [[J]] < [[W]];
// METAL: in0{{\[}}[[N:v[0-9]+]] * tsr_d2 + [[C:v[0-9]+]] + [[J]] * 8L{{\]}}
// METAL: out0{{\[}}[[N]] * tsr_d5 + [[C]] * tsr_d6 + [[J]]{{\]}} =
// METAL-NOT: -1L

// The 7 dims: in0's sizes n, w and stride of n; out0's sizes n, w and strides of n, c.
// CHECK: define void @relu_nhwc(ptr noalias {{.*}}%arg0, ptr noalias {{.*}}%arg1, ptr noalias {{.*}}%dims, i64 %lo, i64 %hi)
// CHECK: getelementptr inbounds {{.*}}ptr %dims, i64 48
// CHECK-NEXT: load i64

// PTX: .visible .entry relu_nhwc(
// PTX-NEXT: .param .u64 .ptr .global .align 1 relu_nhwc_param_0,
// PTX-NEXT: .param .u64 .ptr .global .align 1 relu_nhwc_param_1,
// PTX-NEXT: .param .u64 relu_nhwc_param_2,
// PTX: .param .u64 relu_nhwc_param_8
// PTX-NEXT: )
// PTX-NOT: call

func.func @relu_nhwc(%in0: memref<?x8x?xf32, strided<[?, 1, 8]>>, %out0: memref<?x8x?xf32, strided<[?, ?, 1]>>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = memref.dim %out0, %c0 : memref<?x8x?xf32, strided<[?, ?, 1]>>
  %w = memref.dim %out0, %c2 : memref<?x8x?xf32, strided<[?, ?, 1]>>
  "scf.parallel"(%c0, %c0, %n, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %c: index):
    scf.for %j = %c0 to %w step %c1 {
      %v = memref.load %in0[%i, %c, %j] : memref<?x8x?xf32, strided<[?, 1, 8]>>
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %out0[%i, %c, %j] : memref<?x8x?xf32, strided<[?, ?, 1]>>
    }
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}
