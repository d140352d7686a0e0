// fuse-relayouts: a relayout that meets a kernel disappears into it.
// RUN: compilerctl opt %s -p fuse-relayouts | filecheck %s
// RUN: compilerctl opt %s -p fuse-relayouts,fuse-relayouts | filecheck %s

// Into the producer: the pad kernel writes ndhwc for the conv directly.
// CHECK-LABEL: func.func @into_producer(
// CHECK: %[[P:[^ ]+]] = tsr.pad {{.*}} -> tensor<1x4x4x6x6xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %[[P]],
// CHECK-NOT: tsr.relayout
func.func @into_producer(%x: tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, %w: tensor<4x4x3x3x3xf32, #tsr.layout<ndhwc>>) -> tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>> {
  %f = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %f {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, f32) -> tensor<1x4x4x6x6xf32, #tsr.layout<ncdhw>>
  %r = tsr.relayout %p : (tensor<1x4x4x6x6xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x4x6x6xf32, #tsr.layout<ndhwc>>
  %y = tsr.conv %r, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x4x4x6x6xf32, #tsr.layout<ndhwc>>, tensor<4x4x3x3x3xf32, #tsr.layout<ndhwc>>) -> tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
  func.return %y : tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
}

// Into the consumers: GroupNorm's reshape and the scale read the conv's
// channels-last output through its strides.
// CHECK-LABEL: func.func @into_consumers(
// CHECK: %[[Y:[^ ]+]] = tsr.conv {{.*}} -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: tsr.reshape %[[Y]] : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x2x2x16xf32, #tsr.layout<nchw>>
// CHECK-NEXT: tsr.mul %[[Y]], %{{[^ ]+}} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
// CHECK-NOT: tsr.relayout
func.func @into_consumers(%x: tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, %w: tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> (tensor<1x2x2x16xf32, #tsr.layout<nchw>>, tensor<1x4x4x4xf32, #tsr.layout<nchw>>) {
  %c = tsr.constant 2.000000e+00 : f32
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %r = tsr.relayout %y : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
  %v = tsr.reshape %r : (tensor<1x4x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x2x2x16xf32, #tsr.layout<nchw>>
  %m = tsr.mul %r, %c : (tensor<1x4x4x4xf32, #tsr.layout<nchw>>, f32) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
  func.return %v, %m : tensor<1x2x2x16xf32, #tsr.layout<nchw>>, tensor<1x4x4x4xf32, #tsr.layout<nchw>>
}

// A relayout of a constant (a frozen weight) folds at compile time.
// CHECK-LABEL: func.func @constant_weight(
// CHECK-NEXT: %[[W:[^ ]+]] = tsr.constant dense<{{.*}}> : tensor<2x2x1x1xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: tsr.conv %{{[^ ]+}}, %[[W]]
// CHECK-NOT: tsr.relayout
func.func @constant_weight(%x: tensor<1x2x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x2x4x4xf32, #tsr.layout<nhwc>> {
  %w = tsr.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32, #tsr.layout<nchw>>
  %wr = tsr.relayout %w : (tensor<2x2x1x1xf32, #tsr.layout<nchw>>) -> tensor<2x2x1x1xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %x, %wr {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32, #tsr.layout<nhwc>>, tensor<2x2x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x2x4x4xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x2x4x4xf32, #tsr.layout<nhwc>>
}

// Left alone: between two library ops; a graph output whose strides eager
// fixes; a producer with another user. (The relayout between the second conv
// and the SiLU goes into the SiLU; the weight's goes into the conv's packing.)
// CHECK-LABEL: func.func @stays(
// CHECK-NOT: tsr.relayout
// CHECK: %[[Y1:[^ ]+]] = tsr.conv %x, %w
// CHECK-NEXT: %[[R1:[^ ]+]] = tsr.relayout %[[Y1]] : {{.*}} -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[Y2:[^ ]+]] = tsr.conv %[[R1]]
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.silu %[[Y2]] : (tensor<1x4x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[R3:[^ ]+]] = tsr.relayout %[[S]] : {{.*}} -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: func.return %[[R3]], %[[S]] :
func.func @stays(%x: tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, %w: tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> (tensor<1x4x4x4xf32, #tsr.layout<nchw>>, tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) {
  %wr = tsr.relayout %w : (tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> tensor<4x4x1x1xf32, #tsr.layout<nhwc>>
  %y1 = tsr.conv %x, %wr {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %r1 = tsr.relayout %y1 : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
  %y2 = tsr.conv %r1, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nchw>>, tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
  %r2 = tsr.relayout %y2 : (tensor<1x4x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %r2 : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %r3 = tsr.relayout %s : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nchw>>
  func.return %r3, %s : tensor<1x4x4x4xf32, #tsr.layout<nchw>>, tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
}

// Into a weight packing: a relayout read only as convolution weights (which
// the conv reorders into its own format once) goes; one with another user stays.
// CHECK-LABEL: func.func @weight_packing(
// CHECK-NEXT: %[[Y1:[^ ]+]] = tsr.conv %x, %w {{.*}} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nchw>>)
// CHECK-NEXT: %[[Y2:[^ ]+]] = tsr.conv %[[Y1]], %w
// CHECK-NEXT: %[[V:[^ ]+]] = tsr.relayout %v
// CHECK-NEXT: tsr.conv %[[Y2]], %[[V]]
// CHECK-NEXT: func.return %{{[^ ]+}}, %[[V]] :
func.func @weight_packing(%x: tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, %w: tensor<4x4x1x1xf32, #tsr.layout<nchw>>, %v: tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) {
  %wr = tsr.relayout %w : (tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> tensor<4x4x1x1xf32, #tsr.layout<nhwc>>
  %y1 = tsr.conv %x, %wr {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %y2 = tsr.conv %y1, %wr {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  %vr = tsr.relayout %v : (tensor<4x4x1x1xf32, #tsr.layout<nchw>>) -> tensor<4x4x1x1xf32, #tsr.layout<nhwc>>
  %y3 = tsr.conv %y2, %vr {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x4x4x4xf32, #tsr.layout<nhwc>>
  func.return %y3, %vr : tensor<1x4x4x4xf32, #tsr.layout<nhwc>>, tensor<4x4x1x1xf32, #tsr.layout<nhwc>>
}
