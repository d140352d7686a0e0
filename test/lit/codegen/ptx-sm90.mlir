// --features names the GPU: sm_90 gets PTX ISA 7.8 (the lowest that has it),
// +ptx80 asks for a newer ISA; a bad sm is a diagnostic.

// RUN: compilerctl translate %s --target ptx --emit ptx --features sm_90 | filecheck %s
// RUN: compilerctl translate %s --target ptx --emit ptx --features sm_90,+ptx80 | filecheck %s --check-prefix=PTX80
// RUN: not compilerctl translate %s --target ptx --emit ptx --features sm_35 2>&1 | filecheck %s --check-prefix=BAD

// CHECK: .version 7.8
// CHECK-NEXT: .target sm_90
// CHECK: .visible .entry relu(
// PTX80: .version 8.0
// PTX80-NEXT: .target sm_90
// BAD: error: ptx target 'sm_35': expected sm_75 or newer, e.g. sm_80 or sm_90

builtin.module {
  func.func @relu(%x: memref<1000xf32>, %y: memref<1000xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 1000 : index
    %zero = arith.constant 0.0 : f32
    "scf.parallel"(%c0, %n, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      %v = memref.load %x[%i] : memref<1000xf32>
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %y[%i] : memref<1000xf32>
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
