// split-group-stats: GroupNorm's statistics over a channels-last tensor are taken
// per channel over the pixels (each kernel point a vector of neighbouring
// channels), then over each group's channels; the variance from the squared
// deviations from each channel's group mean. A channels-first tensor's groups
// are contiguous already: left alone.
// RUN: compilerctl opt %s -p 'split-group-stats,dce' | filecheck %s

// CHECK-LABEL: func.func @group_norm_stats(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>)
// CHECK: %[[CM:.+]] = tsr.mean %[[X]] {dims = array<i64: 2, 3>, keepdim = true} : ({{.*}}) -> tensor<1x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK: %[[GC:.+]] = tsr.reshape %[[CM]] : ({{.*}}) -> tensor<1x2x4x1xf32, #tsr.layout<nchw>>
// CHECK: %[[GM:.+]] = tsr.mean %[[GC]] {dims = array<i64: 2, 3>, keepdim = true} : ({{.*}}) -> tensor<1x2x1x1xf32, #tsr.layout<nchw>>
// CHECK: %[[E:.+]] = tsr.expand %[[GM]] : ({{.*}}) -> tensor<1x2x4x1xf32, #tsr.layout<nchw>>
// CHECK: %[[MC:.+]] = tsr.reshape %[[E]] : ({{.*}}) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
// CHECK: %[[D:.+]] = tsr.sub %[[X]], %[[MC]] : ({{.*}}) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK: %[[Q:.+]] = tsr.mul %[[D]], %[[D]]
// CHECK: %[[CV:.+]] = tsr.mean %[[Q]] {dims = array<i64: 2, 3>, keepdim = true} : ({{.*}}) -> tensor<1x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK: %[[VC:.+]] = tsr.reshape %[[CV]] : ({{.*}}) -> tensor<1x2x4x1xf32, #tsr.layout<nchw>>
// CHECK: %[[GV:.+]] = tsr.mean %[[VC]] {dims = array<i64: 2, 3>, keepdim = true}
// CHECK-NOT: tsr.var
// CHECK: %[[M:.+]] = tsr.reshape %[[GM]]
// CHECK: %[[S:.+]] = tsr.reshape %[[GV]]
// CHECK: func.return %[[S]], %[[M]]
func.func @group_norm_stats(%x: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>) {
  %v = tsr.reshape %x : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x2x4x16xf32>
  %s = tsr.var %v {dims = array<i64: 2, 3>, keepdim = true, correction = 0.0 : f64} : (tensor<1x2x4x16xf32>) -> tensor<1x2x1x1xf32>
  %m = tsr.mean %v {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x2x4x16xf32>) -> tensor<1x2x1x1xf32>
  func.return %s, %m : tensor<1x2x1x1xf32>, tensor<1x2x1x1xf32>
}

// Dynamic sizes: the reshape reads a relayout to nchw (a dynamic H*W keeps it
// from fusing); the statistics read the channels-last tensor, the batch size
// through a tsr.dim of it.
// CHECK-LABEL: func.func @dynamic_sizes(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>)
// CHECK-NOT: tsr.relayout
// CHECK: %[[CM:.+]] = tsr.mean %[[X]] {dims = array<i64: 2, 3>, keepdim = true} : ({{.*}}) -> tensor<?x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK: %[[N:.+]] = tsr.dim %[[X]] {dim = 0 : i64}
// CHECK: tsr.reshape %[[CM]], %[[N]] : ({{.*}}) -> tensor<?x2x4x1xf32, #tsr.layout<nchw>>
// CHECK: tsr.sub %[[X]], {{.*}} -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
// CHECK-NOT: tsr.var
func.func @dynamic_sizes(%x: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x2x1x1xf32> {
  %c = tsr.relayout %x : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32>
  %n = tsr.dim %c {dim = 0 : i64} : (tensor<?x8x?x?xf32>) -> i64
  %h = tsr.dim %c {dim = 2 : i64} : (tensor<?x8x?x?xf32>) -> i64
  %w = tsr.dim %c {dim = 3 : i64} : (tensor<?x8x?x?xf32>) -> i64
  %hw = arith.muli %h, %w : i64
  %v = tsr.reshape %c, %n, %hw : (tensor<?x8x?x?xf32>, i64, i64) -> tensor<?x2x4x?xf32>
  %s = tsr.var %v {dims = array<i64: 2, 3>, keepdim = true, correction = 0.0 : f64} : (tensor<?x2x4x?xf32>) -> tensor<?x2x1x1xf32>
  func.return %s : tensor<?x2x1x1xf32>
}

// CHECK-LABEL: func.func @channels_first(
// CHECK: %[[V:.+]] = tsr.reshape
// CHECK: tsr.mean %[[V]] {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x2x4x16xf32>)
func.func @channels_first(%x: tensor<1x8x4x4xf32>) -> tensor<1x2x1x1xf32> {
  %v = tsr.reshape %x : (tensor<1x8x4x4xf32>) -> tensor<1x2x4x16xf32>
  %m = tsr.mean %v {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x2x4x16xf32>) -> tensor<1x2x1x1xf32>
  func.return %m : tensor<1x2x1x1xf32>
}
