// The sink-expands pass: an expand sized by host values (a mean's backward at
// symbolic sizes) moves below ops that read it beside scalars, and into the
// broadcast of an op that reads it beside an operand of the full size.
// RUN: compilerctl opt %s -p sink-expands | filecheck %s
// RUN: compilerctl opt %s -p sink-expands,fuse-kernels | filecheck %s --check-prefix=FUSED

// The mean's backward: the division moves onto the 1x1 gradient, the product
// broadcasts it, and the expand goes.
// CHECK-LABEL: func.func @mean_backward(
// CHECK-SAME: %[[G:[^:]+]]: tensor<?x64x1x1xf32>, %[[X:[^:]+]]: tensor<?x64x?x?xf32>, %[[S:[^:]+]]: tensor<f64>
// CHECK-NOT: tsr.expand
// CHECK: %[[D:[^ ]+]] = tsr.div %[[G]], %[[S]] : (tensor<?x64x1x1xf32>, tensor<f64>) -> tensor<?x64x1x1xf32>
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.mul %[[X]], %[[D]] : (tensor<?x64x?x?xf32>, tensor<?x64x1x1xf32>) -> tensor<?x64x?x?xf32>
// CHECK-NEXT: func.return %[[Y]]
// FUSED-LABEL: func.func @mean_backward(
// FUSED-NOT: tsr.expand
// FUSED: tsr.fused
// FUSED-NOT: tsr.fused
func.func @mean_backward(%g: tensor<?x64x1x1xf32>, %x: tensor<?x64x?x?xf32>, %s: tensor<f64>, %n: i64, %h: i64, %w: i64) -> tensor<?x64x?x?xf32> {
  %e = tsr.expand %g, %n, %h, %w : (tensor<?x64x1x1xf32>, i64, i64, i64) -> tensor<?x64x?x?xf32>
  %d = tsr.div %e, %s : (tensor<?x64x?x?xf32>, tensor<f64>) -> tensor<?x64x?x?xf32>
  %y = tsr.mul %x, %d : (tensor<?x64x?x?xf32>, tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
  func.return %y : tensor<?x64x?x?xf32>
}

// An expand that something other than an elementwise op reads (here the return)
// stays for it; a dim it broadcasts that no other operand has (the product's
// other operand is 1 there) keeps the product on the expanded value.
// CHECK-LABEL: func.func @kept(
// CHECK-SAME: %[[G:[^:]+]]: tensor<?x64x1x1xf32>, %[[X:[^:]+]]: tensor<?x64x1x1xf32>
// CHECK: %[[E:[^ ]+]] = tsr.expand %[[G]]
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.mul %[[X]], %[[E]] : (tensor<?x64x1x1xf32>, tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
// CHECK-NEXT: func.return %[[Y]], %[[E]]
// FUSED-LABEL: func.func @kept(
func.func @kept(%g: tensor<?x64x1x1xf32>, %x: tensor<?x64x1x1xf32>, %n: i64, %h: i64, %w: i64) -> (tensor<?x64x?x?xf32>, tensor<?x64x?x?xf32>) {
  %e = tsr.expand %g, %n, %h, %w : (tensor<?x64x1x1xf32>, i64, i64, i64) -> tensor<?x64x?x?xf32>
  %y = tsr.mul %x, %e : (tensor<?x64x1x1xf32>, tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
  func.return %y, %e : tensor<?x64x?x?xf32>, tensor<?x64x?x?xf32>
}
