// Pointwise kernels walk the innermost dims every tensor stores alike as one
// row (`lowering/row_dims.py`): the h * w plane of NCHW tensors, read through
// `memref.collapse_shape` of each argument that holds it (not of the
// per-channel operand it broadcasts). A static plane of 7x7 is a row of 49:
// six 8-lane vectors and one element; a dynamic one loops over h * w, and the
// LLVM IR multiplies the two run-time sizes once, ahead of the grid.
// RUN: compilerctl dump %s --target x86 --stage kernel | filecheck %s
// RUN: compilerctl dump %s --target x86 --stage llvm | filecheck %s --check-prefix=LLVM

func.func @forward(%x: tensor<2x24x7x7xf32>, %y: tensor<2x24x7x7xf32>, %b: tensor<1x24x1x1xf32>,
                   %u: tensor<?x24x?x?xf32>, %v: tensor<?x24x?x?xf32>)
    -> (tensor<2x24x7x7xf32>, tensor<?x24x?x?xf32>) {
  %p = tsr.mul %x, %y : (tensor<2x24x7x7xf32>, tensor<2x24x7x7xf32>) -> tensor<2x24x7x7xf32>
  %s = tsr.add %p, %b : (tensor<2x24x7x7xf32>, tensor<1x24x1x1xf32>) -> tensor<2x24x7x7xf32>
  %r = tsr.sigmoid %s : (tensor<2x24x7x7xf32>) -> tensor<2x24x7x7xf32>
  %q = tsr.mul %u, %v : (tensor<?x24x?x?xf32>, tensor<?x24x?x?xf32>) -> tensor<?x24x?x?xf32>
  %t = tsr.add %q, %b : (tensor<?x24x?x?xf32>, tensor<1x24x1x1xf32>) -> tensor<?x24x?x?xf32>
  %w = tsr.relu %t : (tensor<?x24x?x?xf32>) -> tensor<?x24x?x?xf32>
  func.return %r, %w : tensor<2x24x7x7xf32>, tensor<?x24x?x?xf32>
}

// CHECK-LABEL: func.func @fused_0(%in0: memref<2x24x7x7xf32>, %in1: memref<2x24x7x7xf32>, %in2: memref<1x24x1x1xf32>, %out0: memref<2x24x7x7xf32>)
// CHECK: memref.collapse_shape %in0 {{.*}}[2 : i64, 3 : i64]] : memref<2x24x7x7xf32> into memref<2x24x49xf32>
// CHECK: memref.collapse_shape %out0 {{.*}}[2 : i64, 3 : i64]]
// CHECK-NOT: memref.collapse_shape %in2
// CHECK: scf.parallel
// CHECK: vector.transfer_read
// CHECK: vector.transfer_write
// CHECK: memref.store

// CHECK-LABEL: func.func @fused_1(%in0: memref<?x24x?x?xf32, strided<[?, ?, ?, 1]>>
// CHECK: memref.collapse_shape %in0 {{.*}}[2 : i64, 3 : i64]] : memref<?x24x?x?xf32, strided<[?, ?, ?, 1]>> into memref<?x24x?xf32, strided<[?, ?, 1]>>
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[H:.+]] = memref.dim %out0, %[[C2]]
// CHECK: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[W:.+]] = memref.dim %out0, %[[C3]]
// CHECK: %[[HW:.+]] = arith.muli %[[H]], %[[W]] : index
// CHECK: scf.parallel
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[HW]]

// LLVM-LABEL: define void @fused_1(
// LLVM: entry:
// LLVM: mul i64 %dim{{[0-9]+}}, %dim{{[0-9]+}}
// LLVM: br
// LLVM: load <8 x float>
