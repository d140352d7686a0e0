// The cse pass: merges identical pure tsr ops, keeps ops that differ in anything.
// RUN: compilerctl opt %s -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse,cse | filecheck %s

// Identical ops on the same operands are merged, and so are the ops that
// become identical once their operands are.
// CHECK-LABEL: func.func @merge(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant 2.000000e+00 : f64
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.exp %[[X]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mul %[[A]], %[[C]] : (tensor<4xf32>, f64) -> tensor<4xf32>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.add %[[M]], %[[M]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: func.return %[[S]] : tensor<4xf32>
func.func @merge(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = tsr.constant 2.000000e+00 : f64
  %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %c1 = tsr.constant 2.000000e+00 : f64
  %ma = tsr.mul %a, %c0 : (tensor<4xf32>, f64) -> tensor<4xf32>
  %mb = tsr.mul %b, %c1 : (tensor<4xf32>, f64) -> tensor<4xf32>
  %s = tsr.add %ma, %mb : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// A layout written as a name or as its dim order is the same type: the two
// relayouts are one.
// CHECK-LABEL: func.func @merge_layouts(
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %{{[^ ]+}} : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return %[[R]], %[[R]] :
func.func @merge_layouts(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) {
  %a = tsr.relayout %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b = tsr.relayout %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<[0, 2, 3, 1]>>
  func.return %a, %b : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
}

// Ops that differ in a property, a result type (a layout included), an
// operand or its order are all kept.
// CHECK-LABEL: func.func @keep_different(
// CHECK-NEXT: tsr.gelu %{{[^ ]+}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: tsr.gelu %{{[^ ]+}} {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: tsr.cmp lt, %[[X:[^,]+]], %[[Y:[^ ]+]] :
// CHECK-NEXT: tsr.cmp gt, %[[X]], %[[Y]] :
// CHECK-NEXT: tsr.sub %[[X]], %[[Y]] :
// CHECK-NEXT: tsr.sub %[[Y]], %[[X]] :
// CHECK-NEXT: tsr.sum %[[X]] {dims = array<i64: 1>, keepdim = true}
// CHECK-NEXT: tsr.sum %[[X]] {dims = array<i64: 0>, keepdim = true}
// CHECK-NEXT: tsr.relayout %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32, #tsr.layout<[1, 0]>>
// CHECK-NEXT: tsr.relayout %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32, #tsr.layout<[0, 1]>>
// CHECK-NEXT: tsr.convert %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xbf16>
// CHECK-NEXT: tsr.convert %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf16>
// CHECK-NEXT: func.return
func.func @keep_different(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>, tensor<1x8xf32>, tensor<2x8xf32, #tsr.layout<[1, 0]>>, tensor<2x8xf32, #tsr.layout<[0, 1]>>, tensor<2x8xbf16>, tensor<2x8xf16>) {
  %g0 = tsr.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %g1 = tsr.gelu %x {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %c0 = tsr.cmp lt, %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %c1 = tsr.cmp gt, %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %s0 = tsr.sub %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %s1 = tsr.sub %y, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %r0 = tsr.sum %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %r1 = tsr.sum %x {dims = array<i64: 0>, keepdim = true} : (tensor<2x8xf32>) -> tensor<1x8xf32>
  %l0 = tsr.relayout %x : (tensor<2x8xf32>) -> tensor<2x8xf32, #tsr.layout<[1, 0]>>
  %l1 = tsr.relayout %x : (tensor<2x8xf32>) -> tensor<2x8xf32, #tsr.layout<[0, 1]>>
  %v0 = tsr.convert %x : (tensor<2x8xf32>) -> tensor<2x8xbf16>
  %v1 = tsr.convert %x : (tensor<2x8xf32>) -> tensor<2x8xf16>
  func.return %g0, %g1, %c0, %c1, %s0, %s1, %r0, %r1, %l0, %l1, %v0, %v1 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x1xf32>, tensor<1x8xf32>, tensor<2x8xf32, #tsr.layout<[1, 0]>>, tensor<2x8xf32, #tsr.layout<[0, 1]>>, tensor<2x8xbf16>, tensor<2x8xf16>
}

// tsr.aten_call may have side effects: two identical calls both stay.
// CHECK-LABEL: func.func @keep_aten_calls(
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.aten_call "aten.bernoulli.default"(%[[X:[^)]+]])
// CHECK-NEXT: %[[B:[^ ]+]] = tsr.aten_call "aten.bernoulli.default"(%[[X]])
// CHECK-NEXT: func.return %[[A]], %[[B]] :
func.func @keep_aten_calls(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tsr.aten_call "aten.bernoulli.default"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %b = tsr.aten_call "aten.bernoulli.default"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// xDSL's cse also erases pure ops that are already unused when it reaches them.
// CHECK-LABEL: func.func @erase_unused(
// CHECK-NEXT: func.return %{{[^ ]+}} : tensor<4xf32>
func.func @erase_unused(%x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %x : tensor<4xf32>
}

// Must do nothing: no two ops are the same and every value is used.
// CHECK-LABEL: func.func @nothing_to_do(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %[[W:[^:]+]]: tensor<64x64x3x3xf32>)
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.conv %[[X]], %[[W]] {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.silu %[[Y]] : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.add %[[S]], %[[C]] : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[A]] : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<1x64x8x8xf32>
// CHECK-NEXT: }
func.func @nothing_to_do(%x: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> {
  %c = tsr.constant 1.000000e+00 : f32
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %y : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %a = tsr.add %s, %c : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %r = tsr.relayout %a : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32>
  func.return %r : tensor<1x64x8x8xf32>
}
