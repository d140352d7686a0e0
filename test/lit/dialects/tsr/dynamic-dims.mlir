// Dynamic dims (`?`, MLIR's spelling): the verifiers check what is known and
// leave what is known only at run time. Round trip of the ops a VAE or a
// classifier is made of, with a dynamic batch and dynamic spatial sizes.
// RUN: compilerctl opt %s -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | compilerctl opt - -p cse | filecheck %s

// CHECK-LABEL: func.func @conv_block(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
func.func @conv_block(%x: tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, %w: tensor<64x64x3x3xf32>, %b: tensor<64xf32>,
                      %s: tensor<64x1x1xf32>)
    -> (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<?x64x1x1xf32>,
        tensor<?x64x?x?xf32>) {
  // CHECK: tsr.conv %[[X]], {{.*}} -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  %c = tsr.conv %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  // CHECK: tsr.mul {{.*}} -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  %m = tsr.mul %c, %s : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<64x1x1xf32>) -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  // CHECK: tsr.silu {{.*}} -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  %a = tsr.silu %m : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
  // CHECK: tsr.mean {{.*}} -> tensor<?x64x1x1xf32>
  %g = tsr.mean %a {dims = array<i64: 2, 3>, keepdim = true} : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x64x1x1xf32>
  // CHECK: tsr.relayout {{.*}} -> tensor<?x64x?x?xf32>
  %r = tsr.relayout %a : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x64x?x?xf32>
  func.return %c, %a, %g, %r : tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, tensor<?x64x1x1xf32>, tensor<?x64x?x?xf32>
}

// A strided conv, a pad, an upsample and a concat of dynamic spatial sizes; a
// slice of a dynamic dim with known bounds has a known size.
// CHECK-LABEL: func.func @resampling(
func.func @resampling(%x: tensor<1x8x?x?xf32>, %w: tensor<16x8x3x3xf32>, %z: f32)
    -> (tensor<1x16x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x16x?x?xf32>, tensor<1x8x4x?xf32>) {
  // CHECK: tsr.conv {{.*}} -> tensor<1x16x?x?xf32>
  %c = tsr.conv %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x?x?xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x?x?xf32>
  // CHECK: tsr.pad {{.*}} -> tensor<1x8x?x?xf32>
  %p = tsr.pad %x, %z {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x8x?x?xf32>, f32) -> tensor<1x8x?x?xf32>
  // CHECK: tsr.upsample {{.*}} -> tensor<1x8x?x?xf32>
  %u = tsr.upsample %x {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<1x8x?x?xf32>) -> tensor<1x8x?x?xf32>
  // CHECK: tsr.concat {{.*}} -> tensor<1x16x?x?xf32>
  %k = tsr.concat %x, %u {dim = 1 : i64} : (tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>) -> tensor<1x16x?x?xf32>
  // CHECK: tsr.slice {{.*}} -> tensor<1x8x4x?xf32>
  %s = tsr.slice %x {dim = 2 : i64, start = 0 : i64, end = 4 : i64, step = 1 : i64} : (tensor<1x8x?x?xf32>) -> tensor<1x8x4x?xf32>
  func.return %c, %p, %u, %k, %s : tensor<1x16x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>, tensor<1x16x?x?xf32>, tensor<1x8x4x?xf32>
}

// A linear layer of a dynamic batch; views of dynamic dims.
// CHECK-LABEL: func.func @linear(
func.func @linear(%x: tensor<?x512xf32>, %wt: tensor<512x10xf32>, %b: tensor<10xf32>, %y: tensor<?x8x4x4xf32>)
    -> (tensor<?x10xf32>, tensor<?x10xf32>, tensor<?x128xf32>, tensor<?x4x4x8xf32>, tensor<?x8x4x10xf32>) {
  // CHECK: tsr.matmul {{.*}} -> tensor<?x10xf32>
  %m = tsr.matmul %x, %wt : (tensor<?x512xf32>, tensor<512x10xf32>) -> tensor<?x10xf32>
  // CHECK: tsr.addmm {{.*}} -> tensor<?x10xf32>
  %a = tsr.addmm %b, %x, %wt : (tensor<10xf32>, tensor<?x512xf32>, tensor<512x10xf32>) -> tensor<?x10xf32>
  // CHECK: tsr.dim %y {dim = 0 : i64} : (tensor<?x8x4x4xf32>) -> i64
  // CHECK: tsr.reshape %y, {{.*}} : (tensor<?x8x4x4xf32>, i64) -> tensor<?x128xf32>
  %n = tsr.dim %y {dim = 0 : i64} : (tensor<?x8x4x4xf32>) -> i64
  %r = tsr.reshape %y, %n : (tensor<?x8x4x4xf32>, i64) -> tensor<?x128xf32>
  // CHECK: tsr.permute {{.*}} -> tensor<?x4x4x8xf32>
  %p = tsr.permute %y {dims = array<i64: 0, 2, 3, 1>} : (tensor<?x8x4x4xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: tsr.expand {{.*}} -> tensor<?x8x4x10xf32>
  %e = tsr.expand %b : (tensor<10xf32>) -> tensor<?x8x4x10xf32>
  func.return %m, %a, %r, %p, %e : tensor<?x10xf32>, tensor<?x10xf32>, tensor<?x128xf32>, tensor<?x4x4x8xf32>, tensor<?x8x4x10xf32>
}
