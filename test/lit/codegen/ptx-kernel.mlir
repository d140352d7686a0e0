// The NVPTX emitter on a small kernel: a .entry with global pointers, one grid
// point per thread (ctaid.x * ntid.x + tid.x, bound-checked against prod(grid) = 32),
// the innermost grid dim fastest, f16 loads widened and the f32 result rounded
// to bf16 with sm_80's native conversions, and no calls (no libdevice).

// RUN: compilerctl translate %s --target ptx --emit ptx | filecheck %s
// RUN: compilerctl translate %s --target ptx --emit ptx | not grep -E "call|\.extern"
// RUN: compilerctl translate %s --target ptx --emit llvm | filecheck %s --check-prefix=LLVM

// CHECK: .version 7.0
// CHECK: .target sm_80
// CHECK: .visible .entry cast_add(
// CHECK-NEXT: .param .u64 .ptr .global {{.*}} cast_add_param_0,
// CHECK: .maxntid 256
// CHECK-DAG: mov.u32 [[CTA:%r[0-9]+]], %ctaid.x;
// CHECK-DAG: mov.u32 [[NT:%r[0-9]+]], %ntid.x;
// CHECK-DAG: mov.u32 [[TID:%r[0-9]+]], %tid.x;
// CHECK: mad.lo.s32 [[FLAT:%r[0-9]+]], [[CTA]], [[NT]], [[TID]];
// CHECK-NEXT: setp.gt.u32 [[OUT:%p[0-9]+]], [[FLAT]], 31;
// CHECK-NEXT: @[[OUT]] bra
// CHECK-DAG: and.b32 {{%r[0-9]+}}, [[FLAT]], 7;
// CHECK-DAG: shr.u32 {{%r[0-9]+}}, [[FLAT]], 3;
// CHECK: ld.global.nc.b16
// CHECK: cvt.f32.f16
// CHECK: cvt.rn.bf16.f32
// CHECK: st.global.b16
// CHECK: ret;

// LLVM: define ptx_kernel void @cast_add(ptr addrspace(1) noalias {{.*}}, ptr addrspace(1) noalias {{.*}}, ptr addrspace(1) noalias {{.*}})
// LLVM-SAME: #[[ATTRS:[0-9]+]]
// LLVM: tail call {{.*}}i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
// LLVM: attributes #[[ATTRS]] = {{{.*}}"nvvm.maxntid"="256"

builtin.module {
  func.func @cast_add(%x: memref<4x8xf16>, %y: memref<4x8xbf16, strided<[1, 4]>>, %out: memref<4x8xbf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 2>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%i: index, %j: index):
      %a = memref.load %x[%i, %j] : memref<4x8xf16>
      %b = memref.load %y[%i, %j] : memref<4x8xbf16, strided<[1, 4]>>
      %af = arith.extf %a : f16 to f32
      %bf = arith.extf %b : bf16 to f32
      %s = arith.addf %af, %bf : f32
      %e = math.exp %s : f32
      %r = arith.truncf %e : f32 to bf16
      memref.store %r, %out[%i, %j] : memref<4x8xbf16>
      scf.reduce
    }) : (index, index, index, index, index, index) -> ()
    func.return
  }
}
