// A training forward's conv, BatchNorm and ReLU6 through x86's graph pipeline: the
// conv computes channels-last; BatchNorm's statistics read its result itself, its
// normalization and the ReLU6 compute channels-last (the saved conv output and the
// saved pre-activation, results free of eager's strides, are returned so), and no
// relayout of the image is left.
// RUN: compilerctl opt %s --target x86 | filecheck %s

// CHECK-LABEL: func.func @conv_batchnorm_relu6(
// CHECK-SAME: -> (tensor<8x32x16x16xf32, #tsr.layout<nhwc>> {tsr.free_layout}, tensor<8x32x16x16xf32, #tsr.layout<nhwc>> {tsr.free_layout}, tensor<8x32x16x16xf32, #tsr.layout<nchw>>)
// CHECK: %[[C:[^ ]+]] = tsr.conv {{.*}} -> tensor<8x32x16x16xf32, #tsr.layout<nhwc>>
// CHECK-NOT: tsr.relayout {{.*}} tensor<8x32x16x16xf32
// CHECK-DAG: tsr.var %[[C]] {{.*}} : (tensor<8x32x16x16xf32, #tsr.layout<nhwc>>)
// CHECK-DAG: tsr.mean %[[C]] {{.*}} : (tensor<8x32x16x16xf32, #tsr.layout<nhwc>>)
// CHECK-DAG: tsr.sub %[[C]], {{.*}} -> tensor<8x32x16x16xf32, #tsr.layout<nhwc>>
// CHECK-NOT: tsr.relayout {{.*}} tensor<8x32x16x16xf32
// CHECK: tsr.conv %{{[^ ]+}}, %{{[^ ]+}} {{.*}} : (tensor<8x32x16x16xf32, #tsr.layout<nhwc>>
func.func @conv_batchnorm_relu6(%x: tensor<8x16x16x16xf32, #tsr.layout<nchw>>, %w: tensor<32x16x3x3xf32, #tsr.layout<nchw>>, %g: tensor<32x1x1xf32, #tsr.layout<ncl>>, %b: tensor<32x1x1xf32, #tsr.layout<ncl>>) -> (tensor<8x32x16x16xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<8x32x16x16xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<8x32x16x16xf32, #tsr.layout<nchw>>) {
  %c = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<8x16x16x16xf32, #tsr.layout<nchw>>, tensor<32x16x3x3xf32, #tsr.layout<nchw>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %v = tsr.var %c {dims = array<i64: 0, 2, 3>, keepdim = true, correction = 0.0 : f64} : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
  %m = tsr.mean %c {dims = array<i64: 0, 2, 3>, keepdim = true} : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
  %eps = tsr.constant 1.0e-05 : f32
  %ve = tsr.add %v, %eps : (tensor<1x32x1x1xf32, #tsr.layout<nchw>>, f32) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
  %r = tsr.rsqrt %ve : (tensor<1x32x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
  %s = tsr.sub %c, %m : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<1x32x1x1xf32, #tsr.layout<nchw>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %n = tsr.mul %s, %r : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<1x32x1x1xf32, #tsr.layout<nchw>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %ng = tsr.mul %n, %g : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<32x1x1xf32, #tsr.layout<ncl>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %y = tsr.add %ng, %b : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<32x1x1xf32, #tsr.layout<ncl>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %z = tsr.constant 0.0 : f32
  %six = tsr.constant 6.0 : f32
  %lo = tsr.maximum %y, %z : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, f32) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %a = tsr.minimum %lo, %six : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, f32) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  %c2 = tsr.conv %a, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<32x16x3x3xf32, #tsr.layout<nchw>>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
  func.return %c, %y, %c2 : tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<8x32x16x16xf32, #tsr.layout<nchw>>, tensor<8x32x16x16xf32, #tsr.layout<nchw>>
}
