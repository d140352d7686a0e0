// An unclosed string literal is an error at once (xDSL's lexer regex backtracked
// exponentially in the rest of the line: this line took minutes), exit status 1.
// RUN: not compilerctl opt %s -p cse 2>&1 | filecheck %s

// CHECK: {{.*}}unclosed-string.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: End of file reached before closing string literal
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> { %0 = "tsr.exp"(%x) {note = "an attribute whose string literal is never closed, long enough to hang}
