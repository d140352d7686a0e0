// A bf16 kernel over a grid of `ceil(w / 8)` tiles of a run-time width, printed
// as MSL: the dims buffer follows the tensors, the grid and its bound check are
// read from it (the IR's tile math ahead of the loop is not printed), the width
// is still read in the body, a run-time stride scales its index, and every
// constant is typed (no bare literal meets a bfloat).
// RUN: compilerctl translate %s --target metal --emit msl -o %t
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=BARE < %t

// CHECK-LABEL: kernel void tiles(
// CHECK-NEXT: device const bfloat* x {{\[\[}}buffer(0){{\]\]}},
// CHECK-NEXT: device bfloat* y {{\[\[}}buffer(1){{\]\]}},
// CHECK-NEXT: constant long* tsr_dims {{\[\[}}buffer(2){{\]\]}},
// CHECK-NEXT: uint tid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// CHECK-NEXT: const long tsr_d2 = tsr_dims[2];  // stride 0 of x
// CHECK-NEXT: const long tsr_d3 = tsr_dims[3];  // size 0 of y
// CHECK-NEXT: const long tsr_d4 = tsr_dims[4];  // size 1 of y
// CHECK-NEXT: const long tsr_d5 = tsr_dims[5];  // stride 0 of y
// CHECK: const bfloat [[HALF:v[0-9]+]] = static_cast<bfloat>(0.5f);
// CHECK: const long [[W:v[0-9]+]] = tsr_d4;
// CHECK-NEXT: const long tsr_g1 = (tsr_d4 + 7L) / 8L;
// CHECK-NEXT: if (static_cast<long>(tid) >= tsr_d3 * tsr_g1) return;
// CHECK-NEXT: uint rest = tid;
// CHECK-NEXT: const long [[J:v[0-9]+]] = static_cast<long>(rest % static_cast<uint>(tsr_g1));
// CHECK-NEXT: rest /= static_cast<uint>(tsr_g1);
// CHECK-NEXT: const long [[I:v[0-9]+]] = static_cast<long>(rest);
// CHECK: const bool {{v[0-9]+}} = [[COL:v[0-9]+]] < [[W]];
// CHECK: const bfloat [[V:v[0-9]+]] = x{{\[}}[[I]] * tsr_d2 + [[COL]]{{\]}};
// CHECK: static_cast<bfloat>(static_cast<float>([[V]]) * static_cast<float>([[HALF]]))
// CHECK: y{{\[}}[[I]] * tsr_d5 + [[COL]]{{\]}} =

// BARE-NOT: {{(half|bfloat) v[0-9]+ = [-+]?[0-9.]}}
// BARE-NOT: {{(half|bfloat) v[0-9]+ = [A-Z]}}
// BARE-NOT: = 7L;

builtin.module {
  func.func @tiles(%x: memref<?x?xbf16, strided<[?, 1]>>, %y: memref<?x?xbf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %half = arith.constant 5.000000e-01 : bf16
    %n = memref.dim %y, %c0 : memref<?x?xbf16>
    %w = memref.dim %y, %c1 : memref<?x?xbf16>
    %a = arith.addi %w, %c7 : index
    %t = arith.divui %a, %c8 : index
    "scf.parallel"(%c0, %c0, %n, %t, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%i: index, %j: index):
      %base = arith.muli %j, %c8 : index
      scf.for %k = %c0 to %c8 step %c1 {
        %col = arith.addi %base, %k : index
        %inside = arith.cmpi slt, %col, %w : index
        scf.if %inside {
          %v = memref.load %x[%i, %col] : memref<?x?xbf16, strided<[?, 1]>>
          %m = arith.mulf %v, %half : bf16
          memref.store %m, %y[%i, %col] : memref<?x?xbf16>
        }
      }
      scf.reduce
    }) : (index, index, index, index, index, index) -> ()
    func.return
  }
}
