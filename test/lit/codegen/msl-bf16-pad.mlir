// A constant-pad kernel in bf16 printed as MSL: the pad value is a typed bfloat
// literal (an exact float literal inside static_cast<bfloat>), bfloat arithmetic
// goes through float with explicit casts, and no bare literal meets a bfloat.
// RUN: compilerctl translate %s --target metal --emit msl -o %t
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=BARE < %t

// CHECK: #include <metal_stdlib>
// CHECK-LABEL: kernel void pad_bf16(
// CHECK-NEXT: device const bfloat* x {{\[\[}}buffer(0){{\]\]}},
// CHECK-NEXT: device bfloat* y {{\[\[}}buffer(1){{\]\]}},
// CHECK-NEXT: uint tid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// CHECK: const bfloat [[PAD:v[0-9]+]] = static_cast<bfloat>(-1.5f);
// CHECK: const bfloat [[SCALE:v[0-9]+]] = static_cast<bfloat>(0.100097656f);
// CHECK: if (tid >= 6u) return;
// CHECK: const int [[I:v[0-9]+]] = static_cast<int>(tid);
// CHECK: const bfloat [[V:v[0-9]+]] = x[v{{[0-9]+}}];
// CHECK: const bfloat [[M:v[0-9]+]] = static_cast<bfloat>(static_cast<float>([[V]]) * static_cast<float>([[SCALE]]));
// CHECK: const bfloat [[R:v[0-9]+]] = v{{[0-9]+}} ? [[M]] : [[PAD]];
// CHECK: y{{\[}}[[I]]{{\]}} = [[R]];

// BARE-NOT: {{(half|bfloat) v[0-9]+ = [-+]?[0-9.]}}
// BARE-NOT: {{(half|bfloat) v[0-9]+ = [A-Z]}}

builtin.module {
  func.func @pad_bf16(%x: memref<4xbf16>, %y: memref<6xbf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c6 = arith.constant 6 : index
    %pad = arith.constant -1.500000e+00 : bf16
    %scale = arith.constant 1.000000e-01 : bf16
    "scf.parallel"(%c0, %c6, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb0(%i: index):
      %j = arith.subi %i, %c1 : index
      %lo = arith.cmpi sge, %j, %c0 : index
      %hi = arith.cmpi sle, %j, %c3 : index
      %inside = arith.andi %lo, %hi : i1
      %j0 = arith.maxsi %j, %c0 : index
      %jc = arith.minsi %j0, %c3 : index
      %v = memref.load %x[%jc] : memref<4xbf16>
      %m = arith.mulf %v, %scale : bf16
      %r = arith.select %inside, %m, %pad : bf16
      memref.store %r, %y[%i] : memref<6xbf16>
      scf.reduce
    }) : (index, index, index) -> ()
    func.return
  }
}
