// compilerctl opt and translate reject a use its definition does not dominate (a use before
// the definition, a value used by its own op): a located error, exit status 1, nothing printed.
// RUN: not compilerctl opt %s -p cse --split-input-file 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: {{.*}}dominance.mlir:[[# @LINE + 2]]:3: error: 'tsr.add' op operand #0 does not dominate this use
func.func @use_before_def(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tsr.add %b, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = tsr.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

// CHECK: {{.*}}dominance.mlir:[[# @LINE + 2]]:3: error: 'tsr.add' op operand #1 does not dominate this use
func.func @self_reference(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tsr.add %x, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
// CHECK-NOT: builtin.module
// CHECK-NOT: internal error
