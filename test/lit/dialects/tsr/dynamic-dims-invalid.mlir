// Dynamic dims: what is known is still checked. One case per split.
// RUN: compilerctl opt %s -p cse --split-input-file --verify-diagnostics

func.func @conv_needs_static_channels(%x: tensor<1x?x8x8xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32> {
  // expected-error @+1 {{'tsr.conv' op input channels must be static, got tensor<1x?x8x8xf32>}}
  %c = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x?x8x8xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return %c : tensor<1x16x6x6xf32>
}

// -----

func.func @conv_known_dims_still_checked(%x: tensor<?x8x?x?xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<?x32x?x?xf32> {
  // expected-error @+1 {{'tsr.conv' op result has shape [?, 32, ?, ?], expected [?, 16, ?, ?]}}
  %c = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x8x?x?xf32>, tensor<16x8x3x3xf32>) -> tensor<?x32x?x?xf32>
  func.return %c : tensor<?x32x?x?xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<?x16xf32>, %b: tensor<8x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'tsr.matmul' op contraction sizes differ: [?, 16] x [8, 4]}}
  %c = tsr.matmul %a, %b : (tensor<?x16xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  func.return %c : tensor<?x4xf32>
}

// -----

func.func @broadcast_of_known_sizes(%a: tensor<?x8xf32>, %b: tensor<?x4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'tsr.add' op shapes [[?, 8], [?, 4]] are not broadcast-compatible}}
  %c = tsr.add %a, %b : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  func.return %c : tensor<?x8xf32>
}

// -----

func.func @concat_outside_dim(%a: tensor<?x8x?xf32>, %b: tensor<?x4x?xf32>) -> tensor<?x12x?xf32> {
  // expected-error @+1 {{'tsr.concat' op operand #1 of shape [?, 4, ?] does not match [?, 8, ?] outside dim 2}}
  %c = tsr.concat %a, %b {dim = 2 : i64} : (tensor<?x8x?xf32>, tensor<?x4x?xf32>) -> tensor<?x12x?xf32>
  func.return %c : tensor<?x12x?xf32>
}

// -----

func.func @reshape_of_known_sizes(%a: tensor<4x8xf32>) -> tensor<?x5xf32> {
  // expected-error @+1 {{'tsr.reshape' op cannot reshape [4, 8] to [?, 5]: 32 elements are not a multiple of 5}}
  %r = tsr.reshape %a : (tensor<4x8xf32>) -> tensor<?x5xf32>
  func.return %r : tensor<?x5xf32>
}

// -----

func.func @slice_past_known_end(%a: tensor<?x8xf32>) -> tensor<?x9xf32> {
  // expected-error @+1 {{'tsr.slice' op need 0 <= start <= end <= 8, got start=0 end=9}}
  %s = tsr.slice %a {dim = 1 : i64, start = 0 : i64, end = 9 : i64, step = 1 : i64} : (tensor<?x8xf32>) -> tensor<?x9xf32>
  func.return %s : tensor<?x9xf32>
}
