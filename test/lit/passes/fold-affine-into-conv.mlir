// fold-affine-into-conv: a per-channel scale and shift of a conv's result,
// computed from arguments alone (an eval BatchNorm), fold into the conv's
// weight and bias; then fuse-conv-epilogues makes the ReLU the conv's own.
// RUN: compilerctl opt %s -p fold-affine-into-conv | filecheck %s
// RUN: compilerctl opt %s -p fold-affine-into-conv,fuse-conv-epilogues | filecheck %s --check-prefix=EPI

// CHECK-LABEL: func.func @conv_bn_relu(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x4x6x6xf32>, %[[W:[^:]+]]: tensor<5x4x3x3xf32>, %[[S:[^:]+]]: tensor<5xf32>, %[[T:[^:]+]]: tensor<5xf32>)
// CHECK: %[[SW:.+]] = tsr.reshape %{{.+}} -> tensor<5x1x1x1xf32>
// CHECK-NEXT: %[[W2:.+]] = tsr.mul %[[W]], %[[SW]] : (tensor<5x4x3x3xf32>, tensor<5x1x1x1xf32>) -> tensor<5x4x3x3xf32>
// CHECK: %[[B:.+]] = tsr.reshape %{{.+}} -> tensor<5xf32>
// CHECK-NEXT: %[[Y:.+]] = tsr.conv %[[X]], %[[W2]], %[[B]] {{.*}} -> tensor<1x5x4x4xf32>
// CHECK-NEXT: %[[R:.+]] = tsr.relu %[[Y]]
// CHECK-NEXT: func.return %[[R]]

// EPI-LABEL: func.func @conv_bn_relu(
// EPI: %[[Y:.+]] = tsr.conv {{.*}}activation = "relu"{{.*}} -> tensor<1x5x4x4xf32>
// EPI-NOT: tsr.relu
// EPI: func.return %[[Y]]
func.func @conv_bn_relu(%x: tensor<1x4x6x6xf32>, %w: tensor<5x4x3x3xf32>, %scale: tensor<5xf32>, %shift: tensor<5xf32>) -> tensor<1x5x4x4xf32> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<5x4x3x3xf32>) -> tensor<1x5x4x4xf32>
  %s = tsr.reshape %scale : (tensor<5xf32>) -> tensor<5x1x1xf32>
  %m = tsr.mul %y, %s : (tensor<1x5x4x4xf32>, tensor<5x1x1xf32>) -> tensor<1x5x4x4xf32>
  %t = tsr.reshape %shift : (tensor<5xf32>) -> tensor<5x1x1xf32>
  %a = tsr.add %m, %t : (tensor<1x5x4x4xf32>, tensor<5x1x1xf32>) -> tensor<1x5x4x4xf32>
  %r = tsr.relu %a : (tensor<1x5x4x4xf32>) -> tensor<1x5x4x4xf32>
  func.return %r : tensor<1x5x4x4xf32>
}
