// fold-affine-into-conv{per_call=true}, the default mode's (weights prepared on every
// call): a BatchNorm's scale folds into a conv whose weight is no larger than its output
// (180 weight elements, 980 outputs); a weight-heavy conv (288 against 8) keeps it.
// RUN: compilerctl opt %s -p 'fold-affine-into-conv{per_call=true}' | filecheck %s

// CHECK-LABEL: func.func @activation_bound(
// CHECK: %[[W2:.+]] = tsr.mul %{{.+}} : (tensor<5x4x3x3xf32>, tensor<5x1x1x1xf32>) -> tensor<5x4x3x3xf32>
// CHECK: %[[Y:.+]] = tsr.conv %{{.+}}, %[[W2]] {{.*}} -> tensor<1x5x14x14xf32>
// CHECK-NEXT: func.return %[[Y]]
func.func @activation_bound(%x: tensor<1x4x16x16xf32>, %w: tensor<5x4x3x3xf32>, %scale: tensor<5xf32>) -> tensor<1x5x14x14xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x16x16xf32>, tensor<5x4x3x3xf32>) -> tensor<1x5x14x14xf32>
  %s = tsr.reshape %scale : (tensor<5xf32>) -> tensor<5x1x1xf32>
  %m = tsr.mul %y, %s : (tensor<1x5x14x14xf32>, tensor<5x1x1xf32>) -> tensor<1x5x14x14xf32>
  func.return %m : tensor<1x5x14x14xf32>
}

// CHECK-LABEL: func.func @weight_bound(
// CHECK: %[[Y:.+]] = tsr.conv %{{.+}}, %{{.+}} {{.*}} -> tensor<1x8x1x1xf32>
// CHECK: %[[M:.+]] = tsr.mul %[[Y]], %{{.+}} : (tensor<1x8x1x1xf32>, tensor<8x1x1xf32>) -> tensor<1x8x1x1xf32>
// CHECK-NEXT: func.return %[[M]]
func.func @weight_bound(%x: tensor<1x4x3x3xf32>, %w: tensor<8x4x3x3xf32>, %scale: tensor<8xf32>) -> tensor<1x8x1x1xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x1x1xf32>
  %s = tsr.reshape %scale : (tensor<8xf32>) -> tensor<8x1x1xf32>
  %m = tsr.mul %y, %s : (tensor<1x8x1x1xf32>, tensor<8x1x1xf32>) -> tensor<1x8x1x1xf32>
  func.return %m : tensor<1x8x1x1xf32>
}

// At dynamic sizes there is no output to weigh: a weight of up to 65536 elements
// folds, a larger one (a deep ResNet layer's 256x256x3x3) keeps its affine after the conv.
// CHECK-LABEL: func.func @dynamic_small_weight(
// CHECK: tsr.mul %{{.+}} : (tensor<8x4x3x3xf32>, tensor<8x1x1x1xf32>) -> tensor<8x4x3x3xf32>
// CHECK: %[[Y:.+]] = tsr.conv
// CHECK-NEXT: func.return %[[Y]]
func.func @dynamic_small_weight(%x: tensor<1x4x?x?xf32>, %w: tensor<8x4x3x3xf32>, %scale: tensor<8xf32>) -> tensor<1x8x?x?xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x?x?xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x?x?xf32>
  %s = tsr.reshape %scale : (tensor<8xf32>) -> tensor<8x1x1xf32>
  %m = tsr.mul %y, %s : (tensor<1x8x?x?xf32>, tensor<8x1x1xf32>) -> tensor<1x8x?x?xf32>
  func.return %m : tensor<1x8x?x?xf32>
}

// CHECK-LABEL: func.func @dynamic_large_weight(
// CHECK: %[[Y:.+]] = tsr.conv %{{.+}}, %{{.+}} {{.*}} -> tensor<1x256x?x?xf32>
// CHECK: %[[M:.+]] = tsr.mul %[[Y]], %{{.+}} : (tensor<1x256x?x?xf32>, tensor<256x1x1xf32>) -> tensor<1x256x?x?xf32>
// CHECK-NEXT: func.return %[[M]]
func.func @dynamic_large_weight(%x: tensor<1x256x?x?xf32>, %w: tensor<256x256x3x3xf32>, %scale: tensor<256xf32>) -> tensor<1x256x?x?xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x256x?x?xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x?x?xf32>
  %s = tsr.reshape %scale : (tensor<256xf32>) -> tensor<256x1x1xf32>
  %m = tsr.mul %y, %s : (tensor<1x256x?x?xf32>, tensor<256x1x1xf32>) -> tensor<1x256x?x?xf32>
  func.return %m : tensor<1x256x?x?xf32>
}
