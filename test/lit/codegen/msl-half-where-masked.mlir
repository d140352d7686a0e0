// `where` and masked fill in f16 printed as MSL: the fill values are typed half
// literals (0.1 rounded to half by the compiler: 0.099975586f reads back as that half exactly),
// -inf is static_cast<half>(-INFINITY), the bool mask is read from a byte buffer,
// half arithmetic is native, and no bare literal or float ever meets a half.
// RUN: compilerctl translate %s --target metal --emit msl -o %t
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=BARE < %t

// CHECK: template <typename T> inline T tsr_maximum(T a, T b) {
// CHECK-LABEL: kernel void where_masked_f16(
// CHECK-NEXT: device const half* x {{\[\[}}buffer(0){{\]\]}},
// CHECK-NEXT: device const uchar* mask {{\[\[}}buffer(1){{\]\]}},
// CHECK-NEXT: device half* y {{\[\[}}buffer(2){{\]\]}},
// CHECK-NEXT: device half* z {{\[\[}}buffer(3){{\]\]}},
// CHECK: const half [[ZERO:v[0-9]+]] = static_cast<half>(0.0f);
// CHECK: const half [[FILL:v[0-9]+]] = static_cast<half>(0.099975586f);
// CHECK: const half [[NINF:v[0-9]+]] = static_cast<half>(-INFINITY);
// CHECK: if (tid >= 32u) return;
// CHECK: uint rest = tid;
// CHECK: const int [[J:v[0-9]+]] = static_cast<int>(rest % 8u);
// CHECK: rest /= 8u;
// CHECK: const int [[I:v[0-9]+]] = static_cast<int>(rest);
// CHECK: const half [[X:v[0-9]+]] = x{{\[}}[[I]] * 8 + [[J]]{{\]}};
// CHECK: const bool [[POS:v[0-9]+]] = [[X]] > [[ZERO]];
// CHECK: const half [[W:v[0-9]+]] = [[POS]] ? [[X]] : [[FILL]];
// CHECK: const bool [[M:v[0-9]+]] = mask{{\[}}[[I]] + [[J]] * 4{{\]}} != 0;
// CHECK: const half [[S:v[0-9]+]] = [[W]] + [[X]];
// CHECK: const half [[F:v[0-9]+]] = [[M]] ? [[NINF]] : [[S]];
// CHECK: y{{\[}}[[I]] * 8 + [[J]]{{\]}} = [[F]];
// CHECK: const half [[MX:v[0-9]+]] = tsr_maximum([[F]], [[X]]);
// CHECK: z{{\[}}[[I]] * 8 + [[J]]{{\]}} = [[MX]];

// BARE-NOT: {{(half|bfloat) v[0-9]+ = [-+]?[0-9.]}}
// BARE-NOT: {{(half|bfloat) v[0-9]+ = [A-Z]}}
// BARE-NOT: {{(half|bfloat) v[0-9]+ = static_cast<float>}}

builtin.module {
  func.func @where_masked_f16(%x: memref<4x8xf16>, %mask: memref<4x8xi1, strided<[1, 4]>>, %y: memref<4x8xf16>,
                              %z: memref<4x8xf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 2, 3>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.000000e+00 : f16
    %fill = arith.constant 1.000000e-01 : f16
    %ninf = arith.constant 0xFC00 : f16
    "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x8xf16>
      %pos = arith.cmpf ogt, %v, %zero : f16
      %w = arith.select %pos, %v, %fill : f16
      %m = memref.load %mask[%i, %j] : memref<4x8xi1, strided<[1, 4]>>
      %s = arith.addf %w, %v : f16
      %f = arith.select %m, %ninf, %s : f16
      memref.store %f, %y[%i, %j] : memref<4x8xf16>
      %mx = arith.maximumf %f, %v : f16
      memref.store %mx, %z[%i, %j] : memref<4x8xf16>
      scf.reduce
    }) : (index, index, index, index, index, index) -> ()
    func.return
  }
}
