// An op the MSL printer does not know is a diagnostic naming the op and its
// location (exit status 1, no traceback).
// RUN: not compilerctl translate %s --target metal --emit msl 2>&1 | filecheck %s

// CHECK: msl-unsupported.mlir:{{[0-9]+}}:{{[0-9]+}}: error: kernel @sine: 'math.sin' is not supported by the Metal (MSL) printer
// CHECK-NOT: Traceback

builtin.module {
  func.func @sine(%x: memref<8xf32>, %y: memref<8xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    "scf.parallel"(%c0, %c8, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      %v = memref.load %x[%i] : memref<8xf32>
      %s = math.sin %v : f32
      memref.store %s, %y[%i] : memref<8xf32>
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
