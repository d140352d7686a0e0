// compilerctl opt with a pass or pipeline it does not know: one error line, exit status 1.
// RUN: not compilerctl opt %s -p no-such-pass 2>&1 | filecheck %s
// RUN: not compilerctl opt %s -p cse,no-such-pass 2>&1 | filecheck %s
// RUN: not compilerctl opt %s -p 'cse{foo=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not compilerctl opt %s --target x87 2>&1 | filecheck %s --check-prefix=TARGET

// CHECK-NOT: Traceback
// CHECK: error: unknown pass 'no-such-pass'; registered passes: {{([a-z-]+, )*}}cse, dce{{(, [a-z-]+)*$}}
// CHECK-NOT: Traceback
// CHECK-NOT: builtin.module

// OPTION: error: bad pass options in 'cse{foo=1}': Provided arguments ["foo"] not found
// OPTION-NOT: Traceback

// TARGET: compilerctl opt: error: argument --target: invalid choice: 'x87'

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
