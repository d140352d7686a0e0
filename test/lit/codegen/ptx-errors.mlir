// What the ptx target refuses is a located diagnostic and exit status 1:
// f64 transcendentals (no libdevice on NVPTX), an emit the target lacks.

// RUN: not compilerctl translate %s --target ptx --emit ptx 2>&1 | filecheck %s
// CHECK: ptx-errors.mlir: error: the ptx target has no math library (libdevice): kernels call @exp
// RUN: not compilerctl translate %s --target ptx --emit msl 2>&1 | filecheck %s --check-prefix=EMIT
// EMIT: {{error: (target ptx cannot emit 'msl'|argument --emit: invalid choice)}}

builtin.module {
  func.func @exp64(%x: memref<8xf64>, %y: memref<8xf64>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    "scf.parallel"(%c0, %c8, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      %v = memref.load %x[%i] : memref<8xf64>
      %e = math.exp %v : f64
      memref.store %e, %y[%i] : memref<8xf64>
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
