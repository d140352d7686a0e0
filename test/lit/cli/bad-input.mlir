// compilerctl opt on input it cannot parse or read: a located error on stderr, exit status 1, no traceback.
// RUN: not compilerctl opt %s -p cse 2>&1 | filecheck %s
// RUN: not compilerctl opt - -p cse < %s 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: not compilerctl opt %s.missing -p cse 2>&1 | filecheck %s --check-prefix=MISSING

// CHECK-NOT: Traceback
// CHECK: {{.*}}bad-input.mlir:[[# @LINE + 6]]:20: error: operand expected
// CHECK-NOT: Traceback
// CHECK-NOT: builtin.module
// STDIN: <stdin>:[[# @LINE + 3]]:20: error: operand expected
// STDIN-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.add %x, : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// MISSING: error: cannot read input: No such file or directory
// MISSING-NOT: Traceback
