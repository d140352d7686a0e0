// RUN: compilerctl opt %s -p fuse-int-mm-epilogues,dce | filecheck %s

// The full quantized-linear chain: the row scale is read through the reshape
// that made it a column, the column scale and the bias as they come.
// CHECK-LABEL: func.func @linear(
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.scaled_int_mm %x, %w, %xs, %ws, %b : (tensor<32x16xui8, #tsr.layout<[0, 1]>>, tensor<16x8xi8, #tsr.layout<[0, 1]>>, tensor<32xf32, #tsr.layout<[0]>>, tensor<8xf32, #tsr.layout<[0]>>, tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
// CHECK-NEXT: func.return %[[Y]]
func.func @linear(%x: tensor<32x16xui8, #tsr.layout<[0, 1]>>, %w: tensor<16x8xi8, #tsr.layout<[0, 1]>>, %xs: tensor<32xf32, #tsr.layout<[0]>>, %ws: tensor<8xf32, #tsr.layout<[0]>>, %b: tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>> {
  %acc = tsr.int_mm %x, %w : (tensor<32x16xui8, #tsr.layout<[0, 1]>>, tensor<16x8xi8, #tsr.layout<[0, 1]>>) -> tensor<32x8xi32, #tsr.layout<[0, 1]>>
  %f = tsr.convert %acc : (tensor<32x8xi32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %xs2 = tsr.reshape %xs : (tensor<32xf32, #tsr.layout<[0]>>) -> tensor<32x1xf32, #tsr.layout<[0, 1]>>
  %r = tsr.mul %f, %xs2 : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x1xf32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %c = tsr.mul %ws, %r : (tensor<8xf32, #tsr.layout<[0]>>, tensor<32x8xf32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %y = tsr.add %c, %b : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  func.return %y : tensor<32x8xf32, #tsr.layout<[0, 1]>>
}

// No bias; a row scale that is a [M, 1] graph input gets a reshape to [M].
// CHECK-LABEL: func.func @no_bias(
// CHECK-NEXT: %[[XS:[^ ]+]] = tsr.reshape %xs : (tensor<32x1xf32, #tsr.layout<[0, 1]>>) -> tensor<32xf32, #tsr.layout<[0]>>
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.scaled_int_mm %x, %w, %[[XS]], %ws : ({{.*}}) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
// CHECK-NEXT: func.return %[[Y]]
func.func @no_bias(%x: tensor<32x16xi8, #tsr.layout<[0, 1]>>, %w: tensor<16x8xi8, #tsr.layout<[0, 1]>>, %xs: tensor<32x1xf32, #tsr.layout<[0, 1]>>, %ws: tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>> {
  %acc = tsr.int_mm %x, %w : (tensor<32x16xi8, #tsr.layout<[0, 1]>>, tensor<16x8xi8, #tsr.layout<[0, 1]>>) -> tensor<32x8xi32, #tsr.layout<[0, 1]>>
  %f = tsr.convert %acc : (tensor<32x8xi32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %r = tsr.mul %f, %xs : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x1xf32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %c = tsr.mul %r, %ws : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  func.return %c : tensor<32x8xf32, #tsr.layout<[0, 1]>>
}

// Left alone: column scale first (another rounding than the kernel's); an
// intermediate with a second user.
// CHECK-LABEL: func.func @stays(
// CHECK-NOT: tsr.scaled_int_mm
// CHECK: func.return
func.func @stays(%x: tensor<32x16xui8, #tsr.layout<[0, 1]>>, %w: tensor<16x8xi8, #tsr.layout<[0, 1]>>, %xs: tensor<32x1xf32, #tsr.layout<[0, 1]>>, %ws: tensor<8xf32, #tsr.layout<[0]>>) -> (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x8xf32, #tsr.layout<[0, 1]>>) {
  %acc = tsr.int_mm %x, %w : (tensor<32x16xui8, #tsr.layout<[0, 1]>>, tensor<16x8xi8, #tsr.layout<[0, 1]>>) -> tensor<32x8xi32, #tsr.layout<[0, 1]>>
  %f = tsr.convert %acc : (tensor<32x8xi32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %c = tsr.mul %f, %ws : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %r = tsr.mul %c, %xs : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x1xf32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %acc2 = tsr.int_mm %x, %w : (tensor<32x16xui8, #tsr.layout<[0, 1]>>, tensor<16x8xi8, #tsr.layout<[0, 1]>>) -> tensor<32x8xi32, #tsr.layout<[0, 1]>>
  %f2 = tsr.convert %acc2 : (tensor<32x8xi32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %r2 = tsr.mul %f2, %xs : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x1xf32, #tsr.layout<[0, 1]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  %c2 = tsr.mul %r2, %ws : (tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<8xf32, #tsr.layout<[0]>>) -> tensor<32x8xf32, #tsr.layout<[0, 1]>>
  func.return %r, %c2, %r2 : tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x8xf32, #tsr.layout<[0, 1]>>, tensor<32x8xf32, #tsr.layout<[0, 1]>>
}
