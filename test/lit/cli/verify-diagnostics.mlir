// --verify-diagnostics itself: an error not expected, or an expected error not produced, fails the run.
// RUN: not compilerctl opt %s -p cse --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// A met expectation reports nothing.
// CHECK-NOT: expected [1, 8]
// CHECK-NOT: Traceback
func.func @met(%x: tensor<1x8xf32>) -> tensor<8x1xf32> {
  // expected-error @+1 {{result has shape [8, 1], expected [1, 8]}}
  %0 = tsr.relayout %x : (tensor<1x8xf32>) -> tensor<8x1xf32>
  func.return %0 : tensor<8x1xf32>
}

// -----

// CHECK: {{.*}}verify-diagnostics.mlir:[[# @LINE + 5]]:3: error: unexpected error: 'tsr.relayout' op result has shape [2, 4], expected [4, 2]
// CHECK-NEXT: {{.*}}verify-diagnostics.mlir:[[# @LINE + 3]]:1: error: expected error "result has shape" on line [[# @LINE + 5]] was not produced
func.func @wrong_line(%x: tensor<4x2xf32>) -> tensor<2x4xf32> {
  // The expectation names the wrong line: the error is both unexpected and not produced.
  // expected-error @+2 {{result has shape}}
  %0 = tsr.relayout %x : (tensor<4x2xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

// CHECK-NEXT: {{.*}}verify-diagnostics.mlir:[[# @LINE + 3]]:1: error: expected error "this op is fine" on line [[# @LINE + 2]] was not produced
func.func @not_produced(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @-1 {{this op is fine}}
  func.return %0 : tensor<4xf32>
}
// CHECK-NOT: error
