// The verifiers of tsr.fused and tsr.yield, one case per split.
// RUN: compilerctl opt %s -p cse --split-input-file --verify-diagnostics

func.func @yield_types(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'tsr.fused' op yielded types (tensor<4x8xf32>) do not match the result types (tensor<4x1xf32>)}}
  %y = tsr.fused (%x) : (tensor<4x8xf32>) -> tensor<4x1xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    tsr.yield %a : tensor<4x8xf32>
  }
  func.return %y : tensor<4x1xf32>
}

// -----

func.func @arguments(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.fused' op body has 2 arguments for 1 operands}}
  %y = tsr.fused (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
    tsr.yield %a : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @library_op_inside(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.fused' op 'tsr.matmul' cannot be part of a fused body}}
  %y = tsr.fused (%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>):
    %m = tsr.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    tsr.yield %m : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}
