// The cast-constants pass: each scalar constant takes the dtype of the value it meets.
// RUN: compilerctl opt %s -p cast-constants | filecheck %s
// RUN: compilerctl opt %s -p cast-constants,cast-constants | filecheck %s
// RUN: compilerctl opt %s -p 'cast-constants{policy=f32-compute}' | filecheck %s --check-prefix=F32

// A pad fill takes the input's element type, rounded to it (0.1 is not exact
// in bf16 nor f16); a constant shared by both pads gets one copy each.
// Under f32-compute both pads read one f32 fill.
// CHECK-LABEL: func.func @pad_fill(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x2x4x4xbf16, #tsr.layout<nhwc>>, %[[H:[^:]+]]: tensor<1x2x4x4xf16>)
// CHECK-NEXT: %[[B:[^ ]+]] = tsr.constant 1.000980e-01 : bf16
// CHECK-NEXT: tsr.pad %[[X]], %[[B]] {{.*}} : (tensor<1x2x4x4xbf16, #tsr.layout<nhwc>>, bf16) -> tensor<1x2x6x6xbf16, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[F:[^ ]+]] = tsr.constant 9.997560e-02 : f16
// CHECK-NEXT: tsr.pad %[[H]], %[[F]] {{.*}} : (tensor<1x2x4x4xf16>, f16) -> tensor<1x2x6x6xf16>
// CHECK-NOT: tsr.constant
// CHECK: func.return
// F32-LABEL: func.func @pad_fill(
// F32-NEXT: %[[C:[^ ]+]] = tsr.constant 1.000000e-01 : f32
// F32-NEXT: tsr.pad %{{[^,]+}}, %[[C]] {{.*}}, f32) -> tensor<1x2x6x6xbf16, #tsr.layout<nhwc>>
// F32-NEXT: tsr.pad %{{[^,]+}}, %[[C]] {{.*}}, f32) -> tensor<1x2x6x6xf16>
func.func @pad_fill(%x: tensor<1x2x4x4xbf16, #tsr.layout<nhwc>>, %h: tensor<1x2x4x4xf16>) -> (tensor<1x2x6x6xbf16, #tsr.layout<nhwc>>, tensor<1x2x6x6xf16>) {
  %z = tsr.constant 1.000000e-01 : f64
  %p = tsr.pad %x, %z {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x2x4x4xbf16, #tsr.layout<nhwc>>, f64) -> tensor<1x2x6x6xbf16, #tsr.layout<nhwc>>
  %q = tsr.pad %h, %z {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x2x4x4xf16>, f64) -> tensor<1x2x6x6xf16>
  func.return %p, %q : tensor<1x2x6x6xbf16, #tsr.layout<nhwc>>, tensor<1x2x6x6xf16>
}

// A where fill (the masked_fill of attention) in half precision.
// CHECK-LABEL: func.func @where_fill(
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant -6.550400e+04 : f16
// CHECK-NEXT: tsr.where %{{[^,]+}}, %{{[^,]+}}, %[[C]] : (tensor<8xi1>, tensor<8xf16>, f16) -> tensor<8xf16>
// F32-LABEL: func.func @where_fill(
// F32-NEXT: %[[C:[^ ]+]] = tsr.constant -6.550400e+04 : f32
// F32-NEXT: tsr.where %{{[^,]+}}, %{{[^,]+}}, %[[C]] : (tensor<8xi1>, tensor<8xf16>, f32) -> tensor<8xf16>
func.func @where_fill(%m: tensor<8xi1>, %x: tensor<8xf16>) -> tensor<8xf16> {
  %c = tsr.constant -6.550400e+04 : f64
  %w = tsr.where %m, %x, %c : (tensor<8xi1>, tensor<8xf16>, f64) -> tensor<8xf16>
  func.return %w : tensor<8xf16>
}

// x + 1.0 on bf16.
// CHECK-LABEL: func.func @add_one(
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant 1.000000e+00 : bf16
// CHECK-NEXT: tsr.add %{{[^,]+}}, %[[C]] : (tensor<8xbf16>, bf16) -> tensor<8xbf16>
// F32-LABEL: func.func @add_one(
// F32-NEXT: %[[C:[^ ]+]] = tsr.constant 1.000000e+00 : f32
// F32-NEXT: tsr.add %{{[^,]+}}, %[[C]] : (tensor<8xbf16>, f32) -> tensor<8xbf16>
func.func @add_one(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %c = tsr.constant 1.000000e+00 : f64
  %y = tsr.add %x, %c : (tensor<8xbf16>, f64) -> tensor<8xbf16>
  func.return %y : tensor<8xbf16>
}

// An i64 literal on an f32 tensor, a bool literal on a bf16 one, and a float
// literal on an int tensor whose (torch-promoted) result is float.
// CHECK-LABEL: func.func @promoted(
// CHECK-NEXT: %[[C3:[^ ]+]] = tsr.constant 3.000000e+00 : f32
// CHECK-NEXT: tsr.mul %{{[^,]+}}, %[[C3]] : (tensor<8xf32>, f32) -> tensor<8xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = tsr.constant 1.000000e+00 : bf16
// CHECK-NEXT: tsr.add %{{[^,]+}}, %[[T]] : (tensor<8xbf16>, bf16) -> tensor<8xbf16>
// CHECK-NEXT: %[[H:[^ ]+]] = tsr.constant 5.000000e-01 : f32
// CHECK-NEXT: tsr.mul %{{[^,]+}}, %[[H]] : (tensor<8xi64>, f32) -> tensor<8xf32>
// CHECK-NOT: tsr.constant
// CHECK: func.return
// F32-LABEL: func.func @promoted(
// F32: tsr.constant 1.000000e+00 : f32
// F32-NEXT: tsr.add %{{[^,]+}}, %{{[^ ]+}} : (tensor<8xbf16>, f32) -> tensor<8xbf16>
func.func @promoted(%x: tensor<8xf32>, %b: tensor<8xbf16>, %i: tensor<8xi64>) -> (tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>) {
  %three = tsr.constant 3 : i64
  %true = tsr.constant true
  %half = tsr.constant 5.000000e-01 : f64
  %y = tsr.mul %x, %three : (tensor<8xf32>, i64) -> tensor<8xf32>
  %z = tsr.add %b, %true : (tensor<8xbf16>, i1) -> tensor<8xbf16>
  %w = tsr.mul %i, %half : (tensor<8xi64>, f64) -> tensor<8xf32>
  func.return %y, %z, %w : tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>
}

// One literal met by an f32 and a bf16 op: two typed copies, each before
// its first user; a second bf16 user reuses the bf16 copy.
// CHECK-LABEL: func.func @shared(
// CHECK-NEXT: %[[C32:[^ ]+]] = tsr.constant 5.000000e-01 : f32
// CHECK-NEXT: tsr.mul %{{[^,]+}}, %[[C32]] : (tensor<8xf32>, f32) -> tensor<8xf32>
// CHECK-NEXT: %[[C16:[^ ]+]] = tsr.constant 5.000000e-01 : bf16
// CHECK-NEXT: %[[Z:[^ ]+]] = tsr.mul %{{[^,]+}}, %[[C16]] : (tensor<8xbf16>, bf16) -> tensor<8xbf16>
// CHECK-NEXT: tsr.sub %[[C16]], %[[Z]] : (bf16, tensor<8xbf16>) -> tensor<8xbf16>
// CHECK-NEXT: func.return
// F32-LABEL: func.func @shared(
// F32-NEXT: %[[C:[^ ]+]] = tsr.constant 5.000000e-01 : f32
// F32-NEXT: tsr.mul %{{[^,]+}}, %[[C]] : (tensor<8xf32>, f32) -> tensor<8xf32>
// F32-NEXT: tsr.mul %{{[^,]+}}, %[[C]] : (tensor<8xbf16>, f32) -> tensor<8xbf16>
// F32-NEXT: tsr.sub %[[C]], %{{[^ ]+}} : (f32, tensor<8xbf16>) -> tensor<8xbf16>
func.func @shared(%x: tensor<8xf32>, %b: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>, tensor<8xbf16>) {
  %c = tsr.constant 5.000000e-01 : f64
  %y = tsr.mul %x, %c : (tensor<8xf32>, f64) -> tensor<8xf32>
  %z = tsr.mul %b, %c : (tensor<8xbf16>, f64) -> tensor<8xbf16>
  %t = tsr.sub %c, %z : (f64, tensor<8xbf16>) -> tensor<8xbf16>
  func.return %y, %z, %t : tensor<8xf32>, tensor<8xbf16>, tensor<8xbf16>
}

// Must do nothing: the constant already has the tensor's type.
// CHECK-LABEL: func.func @typed(
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant 2.000000e+00 : f32
// CHECK-NOT: tsr.constant
// CHECK: tsr.pow %{{[^,]+}}, %[[C]] : (tensor<8xf32>, f32) -> tensor<8xf32>
// CHECK-NEXT: func.return
func.func @typed(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = tsr.constant 2.000000e+00 : f32
  %y = tsr.pow %x, %c : (tensor<8xf32>, f32) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// Comparisons: an int literal takes the int tensor's type (on either side),
// a float literal compared with ints becomes f32, and one compared with bf16
// becomes bf16 under both policies (torch compares in the tensor's dtype).
// CHECK-LABEL: func.func @compare(
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.constant 2.500000e+00 : f32
// CHECK-NEXT: tsr.cmp lt, %{{[^,]+}}, %[[A]] : (tensor<8xi32>, f32) -> tensor<8xi1>
// CHECK-NEXT: %[[B:[^ ]+]] = tsr.constant 7 : i32
// CHECK-NEXT: tsr.cmp ge, %[[B]], %{{[^ ]+}} : (i32, tensor<8xi32>) -> tensor<8xi1>
// CHECK-NEXT: %[[AB:[^ ]+]] = tsr.constant 2.500000e+00 : bf16
// CHECK-NEXT: tsr.cmp eq, %{{[^,]+}}, %[[AB]] : (tensor<8xbf16>, bf16) -> tensor<8xi1>
// CHECK-NEXT: func.return
// F32-LABEL: func.func @compare(
// F32: tsr.cmp eq, %{{[^,]+}}, %{{[^ ]+}} : (tensor<8xbf16>, bf16) -> tensor<8xi1>
func.func @compare(%i: tensor<8xi32>, %x: tensor<8xbf16>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>) {
  %a = tsr.constant 2.500000e+00 : f64
  %b = tsr.constant 7 : i64
  %ca = tsr.cmp lt, %i, %a : (tensor<8xi32>, f64) -> tensor<8xi1>
  %cb = tsr.cmp ge, %b, %i : (i64, tensor<8xi32>) -> tensor<8xi1>
  %cc = tsr.cmp eq, %x, %a : (tensor<8xbf16>, f64) -> tensor<8xi1>
  func.return %ca, %cb, %cc : tensor<8xi1>, tensor<8xi1>, tensor<8xi1>
}

// Must do nothing: no int type holds 2.5 exactly, and an i64 literal that
// does not fit in i8 stays i64 (retyping either would change the result).
// CHECK-LABEL: func.func @inexact(
// CHECK-NEXT: %[[K:[^ ]+]] = tsr.constant 2.500000e+00 : f64
// CHECK-NEXT: %[[L:[^ ]+]] = tsr.constant 300 : i64
// CHECK-NEXT: tsr.maximum %{{[^,]+}}, %[[K]] : (tensor<8xi32>, f64) -> tensor<8xi32>
// CHECK-NEXT: tsr.cmp lt, %{{[^,]+}}, %[[L]] : (tensor<8xi8>, i64) -> tensor<8xi1>
// CHECK-NEXT: func.return
func.func @inexact(%i: tensor<8xi32>, %j: tensor<8xi8>) -> (tensor<8xi32>, tensor<8xi1>) {
  %k = tsr.constant 2.500000e+00 : f64
  %l = tsr.constant 300 : i64
  %m = tsr.maximum %i, %k : (tensor<8xi32>, f64) -> tensor<8xi32>
  %c = tsr.cmp lt, %j, %l : (tensor<8xi8>, i64) -> tensor<8xi1>
  func.return %m, %c : tensor<8xi32>, tensor<8xi1>
}
