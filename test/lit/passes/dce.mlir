// The dce pass: erases unused pure tsr ops, keeps used ones and every tsr.aten_call.
// RUN: compilerctl opt %s -p dce | filecheck %s

// An unused op is erased, and so is what only it used.
// CHECK-LABEL: func.func @erase_chain(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.exp %[[X]] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]] : tensor<4xf32>
// CHECK-NEXT: }
func.func @erase_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tsr.constant 2.000000e+00 : f64
  %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %dead0 = tsr.mul %a, %c : (tensor<4xf32>, f64) -> tensor<4xf32>
  %dead1 = tsr.relayout %dead0 : (tensor<4xf32>) -> tensor<4xf32, #tsr.layout<[0]>>
  %dead2 = tsr.sum %dead1 {dims = array<i64>, keepdim = false} : (tensor<4xf32, #tsr.layout<[0]>>) -> tensor<f32>
  func.return %a : tensor<4xf32>
}

// Every pure op kind goes when unused: here all of them, down to an empty body.
// CHECK-LABEL: func.func @erase_all(
// CHECK-NEXT: func.return{{$}}
// CHECK-NEXT: }
func.func @erase_all(%x: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, %w: tensor<8x8x1x1xf32>, %m: tensor<4x8xf32>) {
  %c = tsr.constant dense<1.000000e+00> : tensor<8x4xf32>
  %v = tsr.convert %x : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x8x8xf32>
  %p = tsr.matmul %m, %c : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %t = tsr.permute %m {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %k = tsr.cmp gt, %m, %m : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %s = tsr.where %k, %m, %m : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// tsr.aten_call may have side effects: it stays even when no result is used,
// and so does what it uses.
// CHECK-LABEL: func.func @keep_aten_calls(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4xf32>)
// CHECK-NEXT: %[[N:[^ ]+]] = tsr.neg %[[X]]
// CHECK-NEXT: %{{[^ ]+}} = tsr.aten_call "aten.bernoulli.default"(%[[N]])
// CHECK-NEXT: %{{[^ ]+}}, %{{[^ ]+}} = tsr.aten_call "aten.sort.default"(%[[X]])
// CHECK-NEXT: tsr.aten_call "aten._assert_async.msg"(%[[X]])
// CHECK-NEXT: func.return %[[X]] : tensor<4xf32>
func.func @keep_aten_calls(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tsr.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = tsr.aten_call "aten.bernoulli.default"(%n) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %s:2 = tsr.aten_call "aten.sort.default"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>)
  tsr.aten_call "aten._assert_async.msg"(%x) {args = [#tsr.operand<0>, "failed"]} : (tensor<4xf32>) -> ()
  func.return %x : tensor<4xf32>
}

// dce is not cse: two identical used ops both stay.
// CHECK-LABEL: func.func @keep_duplicates(
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.exp
// CHECK-NEXT: %[[B:[^ ]+]] = tsr.exp
// CHECK-NEXT: func.return %[[A]], %[[B]] :
func.func @keep_duplicates(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// Must do nothing: every value is used.
// CHECK-LABEL: func.func @nothing_to_do(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64x8x8xf32>, %[[B:[^:]+]]: tensor<64xf32>)
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[P:[^ ]+]] = tsr.pad %[[R]], %[[C]] {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x10x10xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mean %[[P]] {dims = array<i64: 2, 3>, keepdim = false} : (tensor<1x64x10x10xf32, #tsr.layout<nhwc>>) -> tensor<1x64xf32>
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.add %[[M]], %[[B]] : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
// CHECK-NEXT: func.return %[[A]] : tensor<1x64xf32>
// CHECK-NEXT: }
func.func @nothing_to_do(%x: tensor<1x64x8x8xf32>, %b: tensor<64xf32>) -> tensor<1x64xf32> {
  %c = tsr.constant 0.000000e+00 : f32
  %r = tsr.relayout %x : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %p = tsr.pad %r, %c {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x10x10xf32, #tsr.layout<nhwc>>
  %m = tsr.mean %p {dims = array<i64: 2, 3>, keepdim = false} : (tensor<1x64x10x10xf32, #tsr.layout<nhwc>>) -> tensor<1x64xf32>
  %a = tsr.add %m, %b : (tensor<1x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  func.return %a : tensor<1x64xf32>
}
