// Round trip of tsr.fused, tsr.yield and tsr.launch (custom, re-parsed and generic forms), and their verifiers.
// RUN: compilerctl opt %s -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse | compilerctl opt - -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | compilerctl opt - -p cse | filecheck %s

// CHECK-LABEL: func.func @fused(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xbf16, #tsr.layout<[1, 0]>>, %[[B:[^:]+]]: tensor<8xbf16>)
// CHECK-NEXT: %[[Y:[^ ,]+]], %[[S:[^ ]+]] = tsr.fused (%[[X]], %[[B]]) {note = "kept"} : (tensor<4x8xbf16, #tsr.layout<[1, 0]>>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: tensor<4x8xbf16, #tsr.layout<[1, 0]>>, %[[C:[^:]+]]: tensor<8xbf16>):
// CHECK-NEXT: %[[K:[^ ]+]] = tsr.constant 5.000000e-01 : bf16
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mul %[[A]], %[[K]] : (tensor<4x8xbf16, #tsr.layout<[1, 0]>>, bf16) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[Z:[^ ]+]] = tsr.add %[[M]], %[[C]] : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[F:[^ ]+]] = tsr.convert %[[Z]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.sum %[[F]] {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT: tsr.yield %[[Z]], %[[R]] : tensor<4x8xbf16>, tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[L:[^ ]+]] = tsr.launch @fused_0(%[[Y]]) : (tensor<4x8xbf16>) -> tensor<4x8xbf16, #tsr.layout<[1, 0]>>
// CHECK-NEXT: func.return %[[L]], %[[S]] : tensor<4x8xbf16, #tsr.layout<[1, 0]>>, tensor<4xf32>
func.func @fused(%x: tensor<4x8xbf16, #tsr.layout<[1, 0]>>, %b: tensor<8xbf16>) -> (tensor<4x8xbf16, #tsr.layout<[1, 0]>>, tensor<4xf32>) {
  %y, %s = tsr.fused (%x, %b) {note = "kept"} : (tensor<4x8xbf16, #tsr.layout<[1, 0]>>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x8xbf16, #tsr.layout<[1, 0]>>, %c: tensor<8xbf16>):
    %k = tsr.constant 5.000000e-01 : bf16
    %m = tsr.mul %a, %k : (tensor<4x8xbf16, #tsr.layout<[1, 0]>>, bf16) -> tensor<4x8xbf16>
    %z = tsr.add %m, %c : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
    %f = tsr.convert %z : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %r = tsr.sum %f {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
    tsr.yield %z, %r : tensor<4x8xbf16>, tensor<4xf32>
  }
  %l = tsr.launch @fused_0(%y) : (tensor<4x8xbf16>) -> tensor<4x8xbf16, #tsr.layout<[1, 0]>>
  func.return %l, %s : tensor<4x8xbf16, #tsr.layout<[1, 0]>>, tensor<4xf32>
}
