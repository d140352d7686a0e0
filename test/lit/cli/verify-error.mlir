// compilerctl opt on IR that parses but does not verify: every failing op is reported, nothing is printed, exit status 1.
// RUN: not compilerctl opt %s -p cse 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: {{.*}}verify-error.mlir:[[# @LINE + 3]]:3: error: 'tsr.relayout' op result has shape [8, 1], expected [1, 8]
// CHECK-NEXT: {{.*}}verify-error.mlir:[[# @LINE + 3]]:3: error: 'tsr.exp' op tsr.exp needs a floating-point operand
func.func @f(%x: tensor<1x8xf32>, %i: tensor<4xi32>) -> (tensor<8x1xf32>, tensor<4xi32>) {
  %0 = tsr.relayout %x : (tensor<1x8xf32>) -> tensor<8x1xf32>
  %1 = tsr.exp %i : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1 : tensor<8x1xf32>, tensor<4xi32>
}
// CHECK-NOT: builtin.module
// CHECK-NOT: tsr.relayout
