// The kernel lowering of dynamic dims, from graph IR (`compilerctl dump` of an
// .mlir file runs the target's passes, fusion and lowering):
// - a nearest 2x upsample folded into the 3x3 conv after it (a polyphase conv
//   at dynamic sizes), the pad in front of it fused with the SiLU and the
//   NCHW -> NHWC relayout, the phases interleaved with the tanh after;
// - the host allocates each dynamic result from its input's sizes
//   (`tsr.result_dims`: (input, dim, mul, add, div) per dim: n + 2 for the pad,
//   2 * (n - 1) for the interleave);
// - a relayout read at the output's index goes through 8x8 transpose tiles;
//   its h, w, alike in both layouts, are one dim of the tiles (both tensors
//   read through memref.collapse_shape), over a grid of (h * w + 7) / 8
//   tiles; a tile at the edge loops over the min(8, n - start) rows and
//   columns inside the tensor.
// RUN: compilerctl dump %s --target x86 --stage kernel | filecheck %s
// RUN: compilerctl dump %s --target x86 --stage llvm | filecheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @forward(
// CHECK: tsr.launch @fused_0(%x) {tsr.result_dims = [array<i64: -1, 0, 0, 1, 1, -1, 0, 0, 16, 1, 0, 2, 1, 2, 1, 0, 3, 1, 2, 1>]} : (tensor<1x16x?x?xf32>) -> tensor<1x16x?x?xf32, #tsr.layout<nhwc>>
// CHECK: tsr.polyphase_weight
// CHECK: tsr.conv {{.*}} -> tensor<1x64x?x?xf32, #tsr.layout<nhwc>>
// CHECK: tsr.launch @fused_1({{.*}}) {tsr.result_dims = [array<i64: -1, 0, 0, 1, 1, -1, 0, 0, 16, 1, 0, 2, 2, -2, 1, 0, 3, 2, -2, 1>]} : (tensor<1x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<1x16x?x?xf32>

// CHECK-LABEL: func.func @fused_0(%in0: memref<1x16x?x?xf32, strided<[?, ?, ?, 1]>>, %out0: memref<1x16x?x?xf32, strided<[?, 1, ?, 16]>>)
// CHECK: memref.dim %out0
// CHECK: scf.parallel
// CHECK: memref.load %in0
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %out0

// CHECK-LABEL: func.func @fused_1(%in0: memref<1x64x?x?xf32, strided<[?, 1, ?, 64]>>, %out0: memref<1x16x?x?xf32, strided<[?, ?, ?, 1]>>)
// CHECK: arith.remui
// CHECK: memref.load %in0
// CHECK: math.tanh

// CHECK-LABEL: func.func @fused_2(%in0: memref<?x16x?x?xf32, strided<[?, ?, ?, 1]>>, %out0: memref<?x16x?x?xf32, strided<[?, 1, ?, 16]>>)
// CHECK: memref.collapse_shape %in0 {{.*}} into memref<?x16x?xf32, strided<[?, ?, 1]>>
// CHECK: memref.collapse_shape %out0 {{.*}} into memref<?x16x?xf32, strided<[?, 1, 16]>>
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[H:.+]] = memref.dim %out0, %[[C2]] : memref<?x16x?x?xf32, strided<[?, 1, ?, 16]>>
// CHECK: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[W:.+]] = memref.dim %out0, %[[C3]] : memref<?x16x?x?xf32, strided<[?, 1, ?, 16]>>
// CHECK-NEXT: %[[HW:.+]] = arith.muli %[[H]], %[[W]] : index
// CHECK: %[[W7:.+]] = arith.addi %[[HW]], %{{.+}} : index
// CHECK: %[[TILES:.+]] = arith.divui %[[W7]], %{{.+}} : index
// CHECK: "scf.parallel"({{.*}}%[[TILES]]
// CHECK: scf.if
// CHECK-COUNT-24: vector.shuffle
// CHECK: } else {
// CHECK: %[[ROWS:.+]] = arith.select
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[ROWS]]

// The tile grid's extent in the (optimized) LLVM IR: ceil(H * W / 8) from the dims array.
// LLVM-LABEL: define void @fused_2(
// LLVM: %[[HW:.+]] = mul {{.*}}i64 %dim{{[0-9]+}}, %dim{{[0-9]+}}
// LLVM: %[[N:.+]] = add i64 %[[HW]], 7
// LLVM: lshr i64 %[[N]], 3

func.func @forward(%x: tensor<1x16x?x?xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x?x?xf32> {
  %s = tsr.silu %x : (tensor<1x16x?x?xf32>) -> tensor<1x16x?x?xf32>
  %u = tsr.upsample %s {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<1x16x?x?xf32>) -> tensor<1x16x?x?xf32>
  %y = tsr.conv %u, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x?x?xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x?x?xf32>
  %t = tsr.tanh %y : (tensor<1x16x?x?xf32>) -> tensor<1x16x?x?xf32>
  func.return %t : tensor<1x16x?x?xf32>
}

func.func @relayout(%x: tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>> {
  %r = tsr.relayout %x {layout = #tsr.layout<nhwc>} : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %r : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  func.return %s : tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
}
