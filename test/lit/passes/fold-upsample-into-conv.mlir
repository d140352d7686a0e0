// fold-upsample-into-conv: a 3x3 conv of a 2x nearest upsample becomes a
// polyphase conv of the small input (2x2 taps per phase, 4x the channels)
// whose phases are interleaved into the upsampled grid; a 1x1 conv stays.
// RUN: compilerctl opt %s -p fold-upsample-into-conv | filecheck %s

// CHECK-LABEL: func.func @upsample_conv3x3(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x16x16xf32>, %[[W:[^:]+]]: tensor<8x8x3x3xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tsr.upsample
// CHECK: %[[ZERO:.+]] = tsr.constant 0.000000e+00 : f32
// CHECK: %[[XP:.+]] = tsr.pad %[[X]], %[[ZERO]] {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x8x16x16xf32>, f32) -> tensor<1x8x18x18xf32>
// CHECK: %[[WP:.+]] = tsr.polyphase_weight %[[W]] {scales = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<8x8x3x3xf32>) -> tensor<32x8x2x2xf32>
// CHECK: %[[BP:.+]] = tsr.concat %[[B]], %[[B]], %[[B]], %[[B]] {dim = 0 : i64}
// CHECK: %[[C:.+]] = tsr.conv %[[XP]], %[[WP]], %[[BP]] {{.*}}padding = array<i64: 0, 0>{{.*}} -> tensor<1x32x17x17xf32>
// CHECK: %[[Y:.+]] = tsr.polyphase_interleave %[[C]] {scales = array<i64: 2, 2>, shifts = array<i64: 0, 1, 0, 1>} : (tensor<1x32x17x17xf32>) -> tensor<1x8x32x32xf32>
// CHECK: func.return %[[Y]]
func.func @upsample_conv3x3(%x: tensor<1x8x16x16xf32>, %w: tensor<8x8x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x32x32xf32> {
  %u = tsr.upsample %x {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<1x8x16x16xf32>) -> tensor<1x8x32x32xf32>
  %y = tsr.conv %u, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x32x32xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x32x32xf32>
  func.return %y : tensor<1x8x32x32xf32>
}

// A 1x1 conv reads each upsampled element once: no fewer FLOPs, nothing changes.
// CHECK-LABEL: func.func @upsample_conv1x1(
// CHECK: tsr.upsample
// CHECK-NOT: tsr.polyphase
// CHECK: func.return
func.func @upsample_conv1x1(%x: tensor<1x8x16x16xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x8x32x32xf32> {
  %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x16x16xf32>) -> tensor<1x8x32x32xf32>
  %y = tsr.conv %u, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x32x32xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x32x32xf32>
  func.return %y : tensor<1x8x32x32xf32>
}

// Dynamic spatial sizes fold too: the pads do not depend on the size, the
// polyphase conv's output is n + 1 (a dynamic dim), and a whole scale says
// the upsample repeats each element twice.
// CHECK-LABEL: func.func @dynamic_sizes(
// CHECK-NOT: tsr.upsample
// CHECK: tsr.pad {{.*}}low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<?x8x?x?xf32>, f32) -> tensor<?x8x?x?xf32>
// CHECK: tsr.polyphase_weight {{.*}} -> tensor<32x8x2x2xf32>
// CHECK: %[[C:.+]] = tsr.conv {{.*}} -> tensor<?x32x?x?xf32>
// CHECK: tsr.polyphase_interleave %[[C]] {scales = array<i64: 2, 2>, shifts = array<i64: 0, 1, 0, 1>} : (tensor<?x32x?x?xf32>) -> tensor<?x8x?x?xf32>
func.func @dynamic_sizes(%x: tensor<?x8x?x?xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32> {
  %u = tsr.upsample %x {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<?x8x?x?xf32>) -> tensor<?x8x?x?xf32>
  %y = tsr.conv %u, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32>, tensor<8x8x3x3xf32>) -> tensor<?x8x?x?xf32>
  func.return %y : tensor<?x8x?x?xf32>
}

// Without a scale a dynamic size says nothing of how elements repeat: it stays.
// CHECK-LABEL: func.func @dynamic_without_scale(
// CHECK: tsr.upsample
// CHECK-NOT: tsr.polyphase
func.func @dynamic_without_scale(%x: tensor<1x8x?x?xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x?x?xf32> {
  %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x?x?xf32>) -> tensor<1x8x?x?xf32>
  %y = tsr.conv %u, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x?x?xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x?x?xf32>
  func.return %y : tensor<1x8x?x?xf32>
}
