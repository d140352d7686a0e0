// A long reduction on a GPU: a block of 256 lanes per grid point
// (codegen/gpu_reductions.py). The lanes walk the loop with stride 256 from
// their `tid.x`, the point is the block (`ctaid.x`, its bound check uniform
// over the block), the partial sums meet in shared memory through a tree of
// barriers, and lane 0 stores. x86 runs one thread per point and says so.
// RUN: compilerctl translate %s --target ptx --emit ptx | filecheck %s
// RUN: not compilerctl translate %s --target x86 --emit llvm 2>&1 | filecheck %s --check-prefix=X86

// CHECK-LABEL: .visible .entry rowsum(
// CHECK: .shared .align 8 .b8 rowsum_$_lanes_$_float[1024];
// CHECK: mov.u32 %r{{[0-9]+}}, %ctaid.x;
// CHECK: setp.gt.u32 {{.*}}, 3;
// CHECK: mov.u32 %r{{[0-9]+}}, %tid.x;
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared.b32 {{.*}}+512];
// CHECK: bar.sync 0;
// CHECK: ld.shared.b32 {{.*}}+4];
// CHECK: bar.sync 0;
// CHECK: st.global.b32
// X86: error: the x86 target runs one thread per grid point, not 256

builtin.module {
  func.func @rowsum(%x: memref<4x1000xf32>, %y: memref<4xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>, tsr.threads_per_point = 256 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant 1000 : index
    %z = arith.constant 0.000000e+00 : f32
    "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      %lane = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c256 = arith.constant 256 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      %start = arith.addi %c0, %lane : index
      %p = scf.for %j = %start to %n step %c256 iter_args(%acc = %z) -> (f32) {
        %v = memref.load %x[%i, %j] : memref<4x1000xf32>
        %u = arith.addf %acc, %v fastmath<reassoc> : f32
        scf.yield %u : f32
      }
      %s = "gpu.all_reduce"(%p) ({
      ^bb0(%a: f32, %b: f32):
        %c = arith.addf %a, %b fastmath<reassoc> : f32
        "gpu.yield"(%c) : (f32) -> ()
      }) : (f32) -> f32
      scf.if %first {
        memref.store %s, %y[%i] : memref<4xf32>
      }
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
