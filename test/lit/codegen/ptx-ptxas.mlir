// The emitted PTX assembles with NVIDIA's ptxas for sm_80 and sm_90, and
// --emit cubin runs it (an ELF file for the GPU).
// REQUIRES: ptxas

// RUN: compilerctl translate %s --target ptx --emit ptx -o %t.sm80.ptx
// RUN: ptxas -arch=sm_80 %t.sm80.ptx -o %t.sm80.cubin
// RUN: compilerctl translate %s --target ptx --emit ptx --features sm_90 -o %t.sm90.ptx
// RUN: ptxas -arch=sm_90 %t.sm90.ptx -o %t.sm90.cubin
// RUN: compilerctl translate %s --target ptx --emit cubin --features sm_90 -o %t.cubin
// RUN: %python -c "import sys; d = open(sys.argv[1], 'rb').read(); print(d[:4] == b'\x7fELF', len(d) > 1000)" %t.cubin | filecheck %s
// CHECK: True True

builtin.module {
  func.func @softplus_rows(%x: memref<64x33xf32>, %y: memref<64x33xf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c33 = arith.constant 33 : index
    %c64 = arith.constant 64 : index
    %one = arith.constant 1.0 : f32
    "scf.parallel"(%c0, %c64, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      "scf.for"(%c0, %c33, %c1) ({
      ^bb1(%j: index):
        %v = memref.load %x[%i, %j] : memref<64x33xf32>
        %e = math.exp %v : f32
        %s = arith.addf %e, %one : f32
        %l = math.log %s : f32
        %t = math.tanh %l : f32
        %r = arith.truncf %t : f32 to f16
        memref.store %r, %y[%i, %j] : memref<64x33xf16>
        scf.yield
      }) : (index, index, index) -> ()
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
