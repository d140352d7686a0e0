// compilerctl opt --print-ir-after-all prints the module after each pass; --target runs a target's pipeline; -o writes a file.
// RUN: compilerctl opt %s -p cse,dce --print-ir-after-all | filecheck %s
// RUN: compilerctl opt %s --target x86 | filecheck %s --check-prefix=FINAL
// RUN: compilerctl opt %s -p cse,dce -o %t && filecheck %s --check-prefix=FINAL < %t

// After cse the duplicate exp and the unused sub are gone, but the neg stays
// (cse met it while the sub still used it); dce then erases it. The final
// module follows the dumps.
// CHECK: // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK: %[[A:[^ ]+]] = tsr.exp
// CHECK-NEXT: %[[N:[^ ]+]] = tsr.neg %[[A]]
// CHECK-NEXT: func.return %[[A]], %[[A]]
// CHECK: // -----// IR Dump After dce //----- //
// CHECK-NEXT: builtin.module {
// CHECK: %[[B:[^ ]+]] = tsr.exp
// CHECK-NEXT: func.return %[[B]], %[[B]]
// CHECK: builtin.module {
// CHECK-NOT: IR Dump

// FINAL: builtin.module {
// FINAL-NEXT: func.func @f(
// FINAL-NEXT: %[[B:[^ ]+]] = tsr.exp
// FINAL-NEXT: func.return %[[B]], %[[B]]
// FINAL-NOT: tsr.
func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %n = tsr.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %s = tsr.sub %a, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}
