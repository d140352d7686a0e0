// compilerctl opt with a pipeline that does not parse should give one error line, not a traceback.
// (xDSL 0.74's ArgSpecParseError derives from BaseException: build_pipeline catches it by name.)
// RUN: not compilerctl opt %s -p 'cse,,dce' 2>&1 | filecheck %s
// RUN: not compilerctl opt %s -p 'cse{' 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: error: malformed pass pipeline
// CHECK-NOT: Traceback

func.func @f() {
  func.return
}
