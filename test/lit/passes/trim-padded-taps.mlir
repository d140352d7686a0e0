// trim-padded-taps: a conv's taps that read only zero padding go, and a zero pad
// folds into the conv's padding where what is left is the same on both sides.
// WAN's causal 3x3x3 conv on its first frame is a 1x3x3 conv of the unpadded
// frame; r3d_18's last stage at one frame likewise; a conv whose every tap
// reads the image somewhere stays as it was.
// RUN: compilerctl opt %s -p 'trim-padded-taps,dce' | filecheck %s

// CHECK-LABEL: func.func @causal_first_frame(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x1x6x6xf32>, %[[W:[^:]+]]: tensor<8x8x3x3x3xf32>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK-NOT: tsr.pad
// CHECK: %[[T:.+]] = tsr.slice %[[W]] {dim = 2 : i64, start = 2 : i64, end = 3 : i64, step = 1 : i64} : (tensor<8x8x3x3x3xf32>) -> tensor<8x8x1x3x3xf32>
// CHECK: %[[Y:.+]] = tsr.conv %[[X]], %[[T]], %[[B]] {{.*}}padding = array<i64: 0, 1, 1>{{.*}} -> tensor<1x8x1x6x6xf32>
// CHECK: func.return %[[Y]]
func.func @causal_first_frame(%x: tensor<1x8x1x6x6xf32>, %w: tensor<8x8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x1x6x6xf32> {
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %z {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x8x1x6x6xf32>, f32) -> tensor<1x8x3x8x8xf32>
  %y = tsr.conv %p, %w, %b {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x3x8x8xf32>, tensor<8x8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x1x6x6xf32>
  func.return %y : tensor<1x8x1x6x6xf32>
}

// Two frames: the first time tap still reads only the pad; one frame of it stays.
// CHECK-LABEL: func.func @causal_two_frames(
// CHECK: %[[T:.+]] = tsr.slice {{.*}}start = 1 : i64, end = 3 : i64{{.*}} -> tensor<8x8x2x3x3xf32>
// CHECK: %[[P:.+]] = tsr.pad {{.*}}{low = array<i64: 0, 0, 1, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}{{.*}} -> tensor<1x8x3x8x8xf32>
// CHECK: tsr.conv %[[P]], %[[T]] {{.*}}padding = array<i64: 0, 0, 0>
func.func @causal_two_frames(%x: tensor<1x8x2x6x6xf32>, %w: tensor<8x8x3x3x3xf32>) -> tensor<1x8x2x6x6xf32> {
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %z {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x8x2x6x6xf32>, f32) -> tensor<1x8x4x8x8xf32>
  %y = tsr.conv %p, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x4x8x8xf32>, tensor<8x8x3x3x3xf32>) -> tensor<1x8x2x6x6xf32>
  func.return %y : tensor<1x8x2x6x6xf32>
}

// r3d_18's last stage: one frame, padded by 1 in time: the middle time tap.
// CHECK-LABEL: func.func @one_frame(
// CHECK: tsr.slice {{.*}}start = 1 : i64, end = 2 : i64
// CHECK: tsr.conv {{.*}}padding = array<i64: 0, 1, 1>{{.*}} -> tensor<1x8x1x7x7xf32>
func.func @one_frame(%x: tensor<1x8x1x7x7xf32>, %w: tensor<8x8x3x3x3xf32>) -> tensor<1x8x1x7x7xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x1x7x7xf32>, tensor<8x8x3x3x3xf32>) -> tensor<1x8x1x7x7xf32>
  func.return %y : tensor<1x8x1x7x7xf32>
}

// Causal, three frames: every tap reads a frame somewhere; nothing changes.
// CHECK-LABEL: func.func @causal_three_frames(
// CHECK-NOT: tsr.slice
// CHECK: %[[P:.+]] = tsr.pad
// CHECK: tsr.conv %[[P]]
func.func @causal_three_frames(%x: tensor<1x8x3x6x6xf32>, %w: tensor<8x8x3x3x3xf32>) -> tensor<1x8x3x6x6xf32> {
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %z {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x8x3x6x6xf32>, f32) -> tensor<1x8x5x8x8xf32>
  %y = tsr.conv %p, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x5x8x8xf32>, tensor<8x8x3x3x3xf32>) -> tensor<1x8x3x6x6xf32>
  func.return %y : tensor<1x8x3x6x6xf32>
}

// A dynamic batch: the spatial sizes decide, so it trims; dynamic frames: left alone.
// CHECK-LABEL: func.func @dynamic_dims(
// CHECK: %[[T:.+]] = tsr.slice {{.*}}start = 1 : i64, end = 2 : i64
// CHECK: tsr.conv %{{.+}}, %[[T]] {{.*}}padding = array<i64: 0, 1, 1>{{.*}} -> tensor<?x8x1x7x7xf32>
// CHECK: tsr.conv {{.*}}padding = array<i64: 1, 1, 1>{{.*}} -> tensor<1x8x?x7x7xf32>
// CHECK: func.return
func.func @dynamic_dims(%x: tensor<?x8x1x7x7xf32>, %v: tensor<1x8x?x7x7xf32>, %w: tensor<8x8x3x3x3xf32>) -> (tensor<?x8x1x7x7xf32>, tensor<1x8x?x7x7xf32>) {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<?x8x1x7x7xf32>, tensor<8x8x3x3x3xf32>) -> tensor<?x8x1x7x7xf32>
  %u = tsr.conv %v, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x?x7x7xf32>, tensor<8x8x3x3x3xf32>) -> tensor<1x8x?x7x7xf32>
  func.return %y, %u : tensor<?x8x1x7x7xf32>, tensor<1x8x?x7x7xf32>
}
