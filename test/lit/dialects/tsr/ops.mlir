// Round trip of every tsr op: custom form, re-parsed custom form and the generic form all print the same.
// RUN: compilerctl opt %s -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse | compilerctl opt - -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | compilerctl opt - -p cse | filecheck %s

// Every value is returned: cse erases unused pure ops, and that is not what this file tests.

// Scalar and dense constants of each supported element type; a dense one with a layout.
// CHECK-LABEL: func.func @constants(
// CHECK-SAME: ) -> (f64, i64, bf16, i1, ui8, i32, tensor<4x3xf32, #tsr.layout<[1, 0]>>, tensor<4xi64>, tensor<2xi1>, tensor<f32>) {
func.func @constants() -> (f64, i64, bf16, i1, ui8, i32, tensor<4x3xf32, #tsr.layout<[1, 0]>>, tensor<4xi64>, tensor<2xi1>, tensor<f32>) {
  // CHECK-NEXT: %[[F:[^ ,:]+]] = tsr.constant -2.500000e-01 : f64
  %f = tsr.constant -2.500000e-01 : f64
  // CHECK-NEXT: %[[I:[^ ,:]+]] = tsr.constant 7 : i64
  %i = tsr.constant 7 : i64
  // CHECK-NEXT: %[[H:[^ ,:]+]] = tsr.constant 0.000000e+00 : bf16
  %h = tsr.constant 0.000000e+00 : bf16
  // CHECK-NEXT: %[[B:[^ ,:]+]] = tsr.constant true
  %b = tsr.constant true
  // CHECK-NEXT: %[[U:[^ ,:]+]] = tsr.constant 255 : ui8
  %u = tsr.constant 255 : ui8
  // CHECK-NEXT: %[[N:[^ ,:]+]] = tsr.constant -3 : i32
  %n = tsr.constant -3 : i32
  // CHECK-NEXT: %[[W:[^ ,:]+]] = tsr.constant dense<1.000000e+00> : tensor<4x3xf32, #tsr.layout<[1, 0]>>
  %w = tsr.constant dense<1.000000e+00> : tensor<4x3xf32, #tsr.layout<[1, 0]>>
  // CHECK-NEXT: %[[V:[^ ,:]+]] = tsr.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %v = tsr.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  // CHECK-NEXT: %[[M:[^ ,:]+]] = tsr.constant dense<[true, false]> : tensor<2xi1>
  %m = tsr.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: %[[S:[^ ,:]+]] = tsr.constant dense<5.000000e-01> : tensor<f32>
  %s = tsr.constant dense<5.000000e-01> : tensor<f32>
  // CHECK-NEXT: func.return %[[F]], %[[I]], %[[H]], %[[B]], %[[U]], %[[N]], %[[W]], %[[V]], %[[M]], %[[S]] : f64, i64, bf16, i1, ui8, i32, tensor<4x3xf32, #tsr.layout<[1, 0]>>, tensor<4xi64>, tensor<2xi1>, tensor<f32>
  func.return %f, %i, %h, %b, %u, %n, %w, %v, %m, %s : f64, i64, bf16, i1, ui8, i32, tensor<4x3xf32, #tsr.layout<[1, 0]>>, tensor<4xi64>, tensor<2xi1>, tensor<f32>
// CHECK-NEXT: }
}

// tsr.convert changes the element type, tsr.relayout the layout (named, from none, to none).
// CHECK-LABEL: func.func @convert_relayout(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<1x64x8x8xf32, #tsr.layout<nchw>>, %[[M:[^ ,:]+]]: tensor<4xi1>, %[[V:[^ ,:]+]]: tensor<1x8x4x8x8xf16>, %[[A:[^ ,:]+]]: tensor<4x3xf32, #tsr.layout<[1, 0]>>) -> (tensor<1x64x8x8xbf16, #tsr.layout<nchw>>, tensor<4xf32>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>, tensor<4x3xf32>) {
func.func @convert_relayout(%x: tensor<1x64x8x8xf32, #tsr.layout<nchw>>, %m: tensor<4xi1>, %v: tensor<1x8x4x8x8xf16>, %a: tensor<4x3xf32, #tsr.layout<[1, 0]>>) -> (tensor<1x64x8x8xbf16, #tsr.layout<nchw>>, tensor<4xf32>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>, tensor<4x3xf32>) {
  // CHECK-NEXT: %[[C:[^ ,:]+]] = tsr.convert %[[X]] : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xbf16, #tsr.layout<nchw>>
  %c = tsr.convert %x : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xbf16, #tsr.layout<nchw>>
  // CHECK-NEXT: %[[F:[^ ,:]+]] = tsr.convert %[[M]] : (tensor<4xi1>) -> tensor<4xf32>
  %f = tsr.convert %m : (tensor<4xi1>) -> tensor<4xf32>
  // CHECK-NEXT: %[[R:[^ ,:]+]] = tsr.relayout %[[X]] : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %r = tsr.relayout %x : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[R5:[^ ,:]+]] = tsr.relayout %[[V]] : (tensor<1x8x4x8x8xf16>) -> tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>
  %r5 = tsr.relayout %v : (tensor<1x8x4x8x8xf16>) -> tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>
  // CHECK-NEXT: %[[RM:[^ ,:]+]] = tsr.relayout %[[A]] : (tensor<4x3xf32, #tsr.layout<[1, 0]>>) -> tensor<4x3xf32>
  %rm = tsr.relayout %a : (tensor<4x3xf32, #tsr.layout<[1, 0]>>) -> tensor<4x3xf32>
  // CHECK-NEXT: func.return %[[C]], %[[F]], %[[R]], %[[R5]], %[[RM]] : tensor<1x64x8x8xbf16, #tsr.layout<nchw>>, tensor<4xf32>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>, tensor<4x3xf32>
  func.return %c, %f, %r, %r5, %rm : tensor<1x64x8x8xbf16, #tsr.layout<nchw>>, tensor<4xf32>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x4x8x8xf16, #tsr.layout<ndhwc>>, tensor<4x3xf32>
// CHECK-NEXT: }
}

// ATen fallback calls: operands, unit (None), numbers, strings, dtypes, arrays,
// #tsr.torch enums, kwargs, zero operands, no results, and a `none` result.
// CHECK-LABEL: func.func @aten_call(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %[[W:[^ ,:]+]]: tensor<64x64x3x3xf32>) -> (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<2x3xbf16>) {
func.func @aten_call(%x: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %w: tensor<64x64x3x3xf32>) -> (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<2x3xbf16>) {
  // CHECK-NEXT: %[[R:[^ ,:]+]], %[[R_1:[^ ,:]+]], %[[R_2:[^ ,:]+]] = tsr.aten_call "aten.convolution_backward.default"(%[[X]], %[[X]], %[[W]]) {args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.operand<2>, [64 : i64], [1 : i64, 1 : i64], [1 : i64, 1 : i64], [1 : i64, 1 : i64], false, [0 : i64, 0 : i64], 1 : i64, [true, true, false]]} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, none)
  %r:3 = tsr.aten_call "aten.convolution_backward.default"(%x, %x, %w) {args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.operand<2>, [64], [1, 1], [1, 1], [1, 1], false, [0, 0], 1, [true, true, false]]} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, none)
  // CHECK-NEXT: %[[E:[^ ,:]+]] = tsr.aten_call "aten.empty.memory_format"() {args = {{\[\[}}2 : i64, 3 : i64]], kwargs = {dtype = bf16, layout, device = #tsr.torch<"cpu">, pin_memory = false, memory_format = #tsr.torch<"contiguous_format">, scale = 5.000000e-01 : f64, name = "x"}} : () -> tensor<2x3xbf16>
  %e = tsr.aten_call "aten.empty.memory_format"() {args = [[2, 3]], kwargs = {dtype = bf16, layout = unit, device = #tsr.torch<"cpu">, pin_memory = false, memory_format = #tsr.torch<"contiguous_format">, scale = 5.000000e-01 : f64, name = "x"}} : () -> tensor<2x3xbf16>
  // CHECK-NEXT: tsr.aten_call "aten._assert_async.msg"(%[[W]]) {args = [#tsr.operand<0>, "boom"]} : (tensor<64x64x3x3xf32>) -> ()
  tsr.aten_call "aten._assert_async.msg"(%w) {args = [#tsr.operand<0>, "boom"]} : (tensor<64x64x3x3xf32>) -> ()
  // CHECK-NEXT: func.return %[[R]], %[[R_1]], %[[E]] : tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<2x3xbf16>
  func.return %r#0, %r#1, %e : tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<2x3xbf16>
// CHECK-NEXT: }
}

// Every unary op (int operands where allowed), on a layout, and gelu's `approximate`.
// CHECK-LABEL: func.func @unary(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<2x8xf32>, %[[I:[^ ,:]+]]: tensor<2x8xi32>, %[[H:[^ ,:]+]]: tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
func.func @unary(%x: tensor<2x8xf32>, %i: tensor<2x8xi32>, %h: tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK-NEXT: %[[NEG:[^ ,:]+]] = tsr.neg %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %neg = tsr.neg %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[EXP:[^ ,:]+]] = tsr.exp %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %exp = tsr.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[LOG:[^ ,:]+]] = tsr.log %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %log = tsr.log %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[SQRT:[^ ,:]+]] = tsr.sqrt %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sqrt = tsr.sqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[RSQRT:[^ ,:]+]] = tsr.rsqrt %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %rsqrt = tsr.rsqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[SIGMOID:[^ ,:]+]] = tsr.sigmoid %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sigmoid = tsr.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[SILU:[^ ,:]+]] = tsr.silu %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %silu = tsr.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[RELU:[^ ,:]+]] = tsr.relu %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %relu = tsr.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[TANH:[^ ,:]+]] = tsr.tanh %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %tanh = tsr.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[ABS:[^ ,:]+]] = tsr.abs %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %abs = tsr.abs %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[ERF:[^ ,:]+]] = tsr.erf %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %erf = tsr.erf %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[RECIP:[^ ,:]+]] = tsr.reciprocal %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %recip = tsr.reciprocal %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[LOG1P:[^ ,:]+]] = tsr.log1p %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %log1p = tsr.log1p %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[EXPM1:[^ ,:]+]] = tsr.expm1 %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %expm1 = tsr.expm1 %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[FLOOR:[^ ,:]+]] = tsr.floor %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %floor = tsr.floor %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[CEIL:[^ ,:]+]] = tsr.ceil %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %ceil = tsr.ceil %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[TRUNC:[^ ,:]+]] = tsr.trunc %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %trunc = tsr.trunc %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[ROUND:[^ ,:]+]] = tsr.round %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %round = tsr.round %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[INEG:[^ ,:]+]] = tsr.neg %[[I]] : (tensor<2x8xi32>) -> tensor<2x8xi32>
  %ineg = tsr.neg %i : (tensor<2x8xi32>) -> tensor<2x8xi32>
  // CHECK-NEXT: %[[IRELU:[^ ,:]+]] = tsr.relu %[[I]] : (tensor<2x8xi32>) -> tensor<2x8xi32>
  %irelu = tsr.relu %i : (tensor<2x8xi32>) -> tensor<2x8xi32>
  // CHECK-NEXT: %[[IABS:[^ ,:]+]] = tsr.abs %[[I]] : (tensor<2x8xi32>) -> tensor<2x8xi32>
  %iabs = tsr.abs %i : (tensor<2x8xi32>) -> tensor<2x8xi32>
  // CHECK-NEXT: %[[HSILU:[^ ,:]+]] = tsr.silu %[[H]] : (tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>) -> tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>
  %hsilu = tsr.silu %h : (tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>) -> tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[GELU:[^ ,:]+]] = tsr.gelu %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu = tsr.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[GELU_NONE:[^ ,:]+]] = tsr.gelu %[[X]] {approximate = "none"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu_none = tsr.gelu %x {approximate = "none"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[GELU_TANH:[^ ,:]+]] = tsr.gelu %[[X]] {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu_tanh = tsr.gelu %x {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: func.return %[[NEG]], %[[EXP]], %[[LOG]], %[[SQRT]], %[[RSQRT]], %[[SIGMOID]], %[[SILU]], %[[RELU]], %[[TANH]], %[[ABS]], %[[ERF]], %[[RECIP]], %[[INEG]], %[[IRELU]], %[[IABS]], %[[HSILU]], %[[GELU]], %[[GELU_NONE]], %[[GELU_TANH]], %[[LOG1P]], %[[EXPM1]], %[[FLOOR]], %[[CEIL]], %[[TRUNC]], %[[ROUND]] : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  func.return %neg, %exp, %log, %sqrt, %rsqrt, %sigmoid, %silu, %relu, %tanh, %abs, %erf, %recip, %ineg, %irelu, %iabs, %hsilu, %gelu, %gelu_none, %gelu_tanh, %log1p, %expm1, %floor, %ceil, %trunc, %round : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<2x8xi32>, tensor<1x4x4x8xbf16, #tsr.layout<nhwc>>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
// CHECK-NEXT: }
}

// Binary ops on two tensors, with broadcasting either way.
// CHECK-LABEL: func.func @binary_tensor(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<2x8xf32>, %[[Y:[^ ,:]+]]: tensor<2x8xf32>, %[[B:[^ ,:]+]]: tensor<8xf32>, %[[COL:[^ ,:]+]]: tensor<2x1xf32>, %[[ROW:[^ ,:]+]]: tensor<1x8xf32>, %[[ONE:[^ ,:]+]]: tensor<1xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
func.func @binary_tensor(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>, %b: tensor<8xf32>, %col: tensor<2x1xf32>, %row: tensor<1x8xf32>, %one: tensor<1xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK-NEXT: %[[ADD:[^ ,:]+]] = tsr.add %[[X]], %[[Y]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %add = tsr.add %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[SUB:[^ ,:]+]] = tsr.sub %[[X]], %[[B]] : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %sub = tsr.sub %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MUL:[^ ,:]+]] = tsr.mul %[[COL]], %[[ROW]] : (tensor<2x1xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %mul = tsr.mul %col, %row : (tensor<2x1xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[DIV:[^ ,:]+]] = tsr.div %[[B]], %[[X]] : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %div = tsr.div %b, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[POW:[^ ,:]+]] = tsr.pow %[[X]], %[[ONE]] : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  %pow = tsr.pow %x, %one : (tensor<2x8xf32>, tensor<1xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MAX:[^ ,:]+]] = tsr.maximum %[[X]], %[[Y]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %max = tsr.maximum %x, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MIN:[^ ,:]+]] = tsr.minimum %[[ROW]], %[[X]] : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %min = tsr.minimum %row, %x : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: func.return %[[ADD]], %[[SUB]], %[[MUL]], %[[DIV]], %[[POW]], %[[MAX]], %[[MIN]] : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  func.return %add, %sub, %mul, %div, %pow, %max, %min : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
// CHECK-NEXT: }
}

// Binary ops with a scalar on either side, and a bias broadcast onto a nhwc tensor.
// CHECK-LABEL: func.func @binary_scalar(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<2x8xf32>, %[[I:[^ ,:]+]]: tensor<4xi32>, %[[H:[^ ,:]+]]: tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>, %[[BIAS:[^ ,:]+]]: tensor<1x64x1x1xbf16>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>) {
func.func @binary_scalar(%x: tensor<2x8xf32>, %i: tensor<4xi32>, %h: tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>, %bias: tensor<1x64x1x1xbf16>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>) {
  // CHECK-NEXT: %[[C:[^ ,:]+]] = tsr.constant 5.000000e-01 : f64
  %c = tsr.constant 5.000000e-01 : f64
  // CHECK-NEXT: %[[TWO:[^ ,:]+]] = tsr.constant 2.000000e+00 : f64
  %two = tsr.constant 2.000000e+00 : f64
  // CHECK-NEXT: %[[K:[^ ,:]+]] = tsr.constant 3 : i64
  %k = tsr.constant 3 : i64
  // CHECK-NEXT: %[[F:[^ ,:]+]] = tsr.constant 1.000000e+00 : f32
  %f = tsr.constant 1.000000e+00 : f32
  // CHECK-NEXT: %[[SUB:[^ ,:]+]] = tsr.sub %[[X]], %[[C]] : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  %sub = tsr.sub %x, %c : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MUL:[^ ,:]+]] = tsr.mul %[[C]], %[[X]] : (f64, tensor<2x8xf32>) -> tensor<2x8xf32>
  %mul = tsr.mul %c, %x : (f64, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[POW:[^ ,:]+]] = tsr.pow %[[X]], %[[TWO]] : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  %pow = tsr.pow %x, %two : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[ADD:[^ ,:]+]] = tsr.add %[[I]], %[[K]] : (tensor<4xi32>, i64) -> tensor<4xi32>
  %add = tsr.add %i, %k : (tensor<4xi32>, i64) -> tensor<4xi32>
  // CHECK-NEXT: %[[DIV:[^ ,:]+]] = tsr.div %[[F]], %[[X]] : (f32, tensor<2x8xf32>) -> tensor<2x8xf32>
  %div = tsr.div %f, %x : (f32, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MAX:[^ ,:]+]] = tsr.maximum %[[X]], %[[F]] : (tensor<2x8xf32>, f32) -> tensor<2x8xf32>
  %max = tsr.maximum %x, %f : (tensor<2x8xf32>, f32) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[MIN:[^ ,:]+]] = tsr.minimum %[[X]], %[[C]] : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  %min = tsr.minimum %x, %c : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[HB:[^ ,:]+]] = tsr.add %[[H]], %[[BIAS]] : (tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>, tensor<1x64x1x1xbf16>) -> tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
  %hb = tsr.add %h, %bias : (tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>, tensor<1x64x1x1xbf16>) -> tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
  // CHECK-NEXT: func.return %[[SUB]], %[[MUL]], %[[POW]], %[[ADD]], %[[DIV]], %[[MAX]], %[[MIN]], %[[HB]] : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
  func.return %sub, %mul, %pow, %add, %div, %max, %min, %hb : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
// CHECK-NEXT: }
}

// tsr.cmp with each predicate, and tsr.where with tensor and scalar branches.
// CHECK-LABEL: func.func @cmp_where(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<2x8xf32>, %[[Y:[^ ,:]+]]: tensor<8xf32>, %[[I:[^ ,:]+]]: tensor<2x8xi64>) -> (tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
func.func @cmp_where(%x: tensor<2x8xf32>, %y: tensor<8xf32>, %i: tensor<2x8xi64>) -> (tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK-NEXT: %[[C:[^ ,:]+]] = tsr.constant 0.000000e+00 : f64
  %c = tsr.constant 0.000000e+00 : f64
  // CHECK-NEXT: %[[Z:[^ ,:]+]] = tsr.constant 0 : i64
  %z = tsr.constant 0 : i64
  // CHECK-NEXT: %[[EQ:[^ ,:]+]] = tsr.cmp eq, %[[X]], %[[Y]] : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %eq = tsr.cmp eq, %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[NE:[^ ,:]+]] = tsr.cmp ne, %[[I]], %[[Z]] : (tensor<2x8xi64>, i64) -> tensor<2x8xi1>
  %ne = tsr.cmp ne, %i, %z : (tensor<2x8xi64>, i64) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[LT:[^ ,:]+]] = tsr.cmp lt, %[[X]], %[[C]] : (tensor<2x8xf32>, f64) -> tensor<2x8xi1>
  %lt = tsr.cmp lt, %x, %c : (tensor<2x8xf32>, f64) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[LE:[^ ,:]+]] = tsr.cmp le, %[[Y]], %[[X]] : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %le = tsr.cmp le, %y, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[GT:[^ ,:]+]] = tsr.cmp gt, %[[C]], %[[X]] : (f64, tensor<2x8xf32>) -> tensor<2x8xi1>
  %gt = tsr.cmp gt, %c, %x : (f64, tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[GE:[^ ,:]+]] = tsr.cmp ge, %[[X]], %[[X]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %ge = tsr.cmp ge, %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %[[W1:[^ ,:]+]] = tsr.where %[[LT]], %[[X]], %[[C]] : (tensor<2x8xi1>, tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  %w1 = tsr.where %lt, %x, %c : (tensor<2x8xi1>, tensor<2x8xf32>, f64) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[W2:[^ ,:]+]] = tsr.where %[[GT]], %[[Y]], %[[X]] : (tensor<2x8xi1>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %w2 = tsr.where %gt, %y, %x : (tensor<2x8xi1>, tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %[[W3:[^ ,:]+]] = tsr.where %[[EQ]], %[[C]], %[[Y]] : (tensor<2x8xi1>, f64, tensor<8xf32>) -> tensor<2x8xf32>
  %w3 = tsr.where %eq, %c, %y : (tensor<2x8xi1>, f64, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: func.return %[[EQ]], %[[NE]], %[[LT]], %[[LE]], %[[GT]], %[[GE]], %[[W1]], %[[W2]], %[[W3]] : tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  func.return %eq, %ne, %lt, %le, %gt, %ge, %w1, %w2, %w3 : tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
// CHECK-NEXT: }
}

// Data movement: pad (and a negative pad that crops), permute, reshape, expand, slice, concat.
// CHECK-LABEL: func.func @shape(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, %[[M:[^ ,:]+]]: tensor<4x8xf32>, %[[T:[^ ,:]+]]: tensor<1x4x4x8xf32>, %[[B:[^ ,:]+]]: tensor<1x64x1x1xf32>, %[[S:[^ ,:]+]]: tensor<1x8x8xf32>, %[[P:[^ ,:]+]]: tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, %[[Q:[^ ,:]+]]: tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> (tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>, tensor<8x4xf32>, tensor<1x4x32xf32>, tensor<2x64x8x8xf32>, tensor<1x8x3xf32>, tensor<1x48x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>) {
func.func @shape(%x: tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, %m: tensor<4x8xf32>, %t: tensor<1x4x4x8xf32>, %b: tensor<1x64x1x1xf32>, %s: tensor<1x8x8xf32>, %p: tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, %q: tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> (tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>, tensor<8x4xf32>, tensor<1x4x32xf32>, tensor<2x64x8x8xf32>, tensor<1x8x3xf32>, tensor<1x48x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>) {
  // CHECK-NEXT: %[[F:[^ ,:]+]] = tsr.constant 0.000000e+00 : f32
  %f = tsr.constant 0.000000e+00 : f32
  // CHECK-NEXT: %[[PAD:[^ ,:]+]] = tsr.pad %[[X]], %[[F]] {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>
  %pad = tsr.pad %x, %f {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>
  // CHECK-NEXT: %[[CROP:[^ ,:]+]] = tsr.pad %[[X]], %[[F]] {low = array<i64: 0, 0, 0, -1, -1>, high = array<i64: 0, 0, 0, -1, -1>} : (tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>
  %crop = tsr.pad %x, %f {low = array<i64: 0, 0, 0, -1, -1>, high = array<i64: 0, 0, 0, -1, -1>} : (tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>
  // CHECK-NEXT: %[[PERM:[^ ,:]+]] = tsr.permute %[[M]] {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %perm = tsr.permute %m {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // CHECK-NEXT: %[[RESH:[^ ,:]+]] = tsr.reshape %[[T]] : (tensor<1x4x4x8xf32>) -> tensor<1x4x32xf32>
  %resh = tsr.reshape %t : (tensor<1x4x4x8xf32>) -> tensor<1x4x32xf32>
  // CHECK-NEXT: %[[EXP:[^ ,:]+]] = tsr.expand %[[B]] : (tensor<1x64x1x1xf32>) -> tensor<2x64x8x8xf32>
  %exp = tsr.expand %b : (tensor<1x64x1x1xf32>) -> tensor<2x64x8x8xf32>
  // CHECK-NEXT: %[[SL:[^ ,:]+]] = tsr.slice %[[S]] {dim = 2 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x3xf32>
  %sl = tsr.slice %s {dim = 2 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x3xf32>
  // CHECK-NEXT: %[[CAT:[^ ,:]+]] = tsr.concat %[[P]], %[[Q]] {dim = 1 : i64} : (tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x48x8x8xf32, #tsr.layout<nhwc>>
  %cat = tsr.concat %p, %q {dim = 1 : i64} : (tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x48x8x8xf32, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[CAT1:[^ ,:]+]] = tsr.concat %[[Q]], %[[Q]] {dim = -3 : i64} : (tensor<1x16x8x8xf32, #tsr.layout<nhwc>>, tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x32x8x8xf32>
  %cat1 = tsr.concat %q, %q {dim = -3 : i64} : (tensor<1x16x8x8xf32, #tsr.layout<nhwc>>, tensor<1x16x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x32x8x8xf32>
  // CHECK-NEXT: func.return %[[PAD]], %[[CROP]], %[[PERM]], %[[RESH]], %[[EXP]], %[[SL]], %[[CAT]], %[[CAT1]] : tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>, tensor<8x4xf32>, tensor<1x4x32xf32>, tensor<2x64x8x8xf32>, tensor<1x8x3xf32>, tensor<1x48x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>
  func.return %pad, %crop, %perm, %resh, %exp, %sl, %cat, %cat1 : tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x30x30xf32, #tsr.layout<ndhwc>>, tensor<8x4xf32>, tensor<1x4x32xf32>, tensor<2x64x8x8xf32>, tensor<1x8x3xf32>, tensor<1x48x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>
// CHECK-NEXT: }
}

// 1-D, 2-D and 3-D convolutions, with and without bias, strided, dilated, depthwise and grouped.
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[X1:[^ ,:]+]]: tensor<1x16x32xf32, #tsr.layout<nlc>>, %[[W1:[^ ,:]+]]: tensor<32x16x3xf32>, %[[X2:[^ ,:]+]]: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %[[W2:[^ ,:]+]]: tensor<128x64x3x3xf32, #tsr.layout<nhwc>>, %[[B2:[^ ,:]+]]: tensor<128xf32>, %[[DW:[^ ,:]+]]: tensor<64x1x3x3xf32>, %[[GW:[^ ,:]+]]: tensor<32x16x1x1xf32>, %[[X3:[^ ,:]+]]: tensor<1x64x6x34x34xbf16, #tsr.layout<ndhwc>>, %[[W3:[^ ,:]+]]: tensor<64x64x3x3x3xbf16>, %[[B3:[^ ,:]+]]: tensor<64xbf16>) -> (tensor<1x32x32xf32, #tsr.layout<nlc>>, tensor<1x128x4x4xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>, tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>) {
func.func @conv(%x1: tensor<1x16x32xf32, #tsr.layout<nlc>>, %w1: tensor<32x16x3xf32>, %x2: tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, %w2: tensor<128x64x3x3xf32, #tsr.layout<nhwc>>, %b2: tensor<128xf32>, %dw: tensor<64x1x3x3xf32>, %gw: tensor<32x16x1x1xf32>, %x3: tensor<1x64x6x34x34xbf16, #tsr.layout<ndhwc>>, %w3: tensor<64x64x3x3x3xbf16>, %b3: tensor<64xbf16>) -> (tensor<1x32x32xf32, #tsr.layout<nlc>>, tensor<1x128x4x4xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>, tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>) {
  // CHECK-NEXT: %[[C1:[^ ,:]+]] = tsr.conv %[[X1]], %[[W1]] {stride = array<i64: 1>, padding = array<i64: 1>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<1x16x32xf32, #tsr.layout<nlc>>, tensor<32x16x3xf32>) -> tensor<1x32x32xf32, #tsr.layout<nlc>>
  %c1 = tsr.conv %x1, %w1 {stride = array<i64: 1>, padding = array<i64: 1>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<1x16x32xf32, #tsr.layout<nlc>>, tensor<32x16x3xf32>) -> tensor<1x32x32xf32, #tsr.layout<nlc>>
  // CHECK-NEXT: %[[C2:[^ ,:]+]] = tsr.conv %[[X2]], %[[W2]], %[[B2]] {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<128x64x3x3xf32, #tsr.layout<nhwc>>, tensor<128xf32>) -> tensor<1x128x4x4xf32, #tsr.layout<nhwc>>
  %c2 = tsr.conv %x2, %w2, %b2 {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<128x64x3x3xf32, #tsr.layout<nhwc>>, tensor<128xf32>) -> tensor<1x128x4x4xf32, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[DWC:[^ ,:]+]] = tsr.conv %[[X2]], %[[DW]] {stride = array<i64: 1, 1>, padding = array<i64: 2, 2>, dilation = array<i64: 2, 2>, groups = 64 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x1x3x3xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %dwc = tsr.conv %x2, %dw {stride = array<i64: 1, 1>, padding = array<i64: 2, 2>, dilation = array<i64: 2, 2>, groups = 64 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<64x1x3x3xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[GC:[^ ,:]+]] = tsr.conv %[[X2]], %[[GW]] {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %gc = tsr.conv %x2, %gw {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  // CHECK-NEXT: %[[C3:[^ ,:]+]] = tsr.conv %[[X3]], %[[W3]], %[[B3]] {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x64x6x34x34xbf16, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xbf16>, tensor<64xbf16>) -> tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>
  %c3 = tsr.conv %x3, %w3, %b3 {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x64x6x34x34xbf16, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xbf16>, tensor<64xbf16>) -> tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>
  // CHECK-NEXT: func.return %[[C1]], %[[C2]], %[[DWC]], %[[GC]], %[[C3]] : tensor<1x32x32xf32, #tsr.layout<nlc>>, tensor<1x128x4x4xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>, tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>
  func.return %c1, %c2, %dwc, %gc, %c3 : tensor<1x32x32xf32, #tsr.layout<nlc>>, tensor<1x128x4x4xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x32x8x8xf32>, tensor<1x64x4x32x32xbf16, #tsr.layout<ndhwc>>
// CHECK-NEXT: }
}

// Reductions: some dims, all dims (empty dims), negative dims, keepdim, var's correction.
// CHECK-LABEL: func.func @reductions(
// CHECK-SAME: %[[X:[^ ,:]+]]: tensor<1x4x8x8xf32, #tsr.layout<nhwc>>, %[[M:[^ ,:]+]]: tensor<2x8xf32>, %[[I:[^ ,:]+]]: tensor<2x8xi64>, %[[G:[^ ,:]+]]: tensor<1x4x4x256xf32>) -> (tensor<1x4x1x1xf32>, tensor<f32>, tensor<2xf32>, tensor<2x1xf32>, tensor<8xi64>, tensor<1x4x1x1xf32>, tensor<1x4xf32>) {
func.func @reductions(%x: tensor<1x4x8x8xf32, #tsr.layout<nhwc>>, %m: tensor<2x8xf32>, %i: tensor<2x8xi64>, %g: tensor<1x4x4x256xf32>) -> (tensor<1x4x1x1xf32>, tensor<f32>, tensor<2xf32>, tensor<2x1xf32>, tensor<8xi64>, tensor<1x4x1x1xf32>, tensor<1x4xf32>) {
  // CHECK-NEXT: %[[SUM:[^ ,:]+]] = tsr.sum %[[X]] {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x4x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x4x1x1xf32>
  %sum = tsr.sum %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x4x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x4x1x1xf32>
  // CHECK-NEXT: %[[ALL:[^ ,:]+]] = tsr.sum %[[M]] {dims = array<i64>, keepdim = false} : (tensor<2x8xf32>) -> tensor<f32>
  %all = tsr.sum %m {dims = array<i64>, keepdim = false} : (tensor<2x8xf32>) -> tensor<f32>
  // CHECK-NEXT: %[[MEAN:[^ ,:]+]] = tsr.mean %[[M]] {dims = array<i64: 1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2xf32>
  %mean = tsr.mean %m {dims = array<i64: 1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2xf32>
  // CHECK-NEXT: %[[AMAX:[^ ,:]+]] = tsr.amax %[[M]] {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %amax = tsr.amax %m {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  // CHECK-NEXT: %[[AMIN:[^ ,:]+]] = tsr.amin %[[I]] {dims = array<i64: 0>, keepdim = false} : (tensor<2x8xi64>) -> tensor<8xi64>
  %amin = tsr.amin %i {dims = array<i64: 0>, keepdim = false} : (tensor<2x8xi64>) -> tensor<8xi64>
  // CHECK-NEXT: %[[VAR:[^ ,:]+]] = tsr.var %[[G]] {dims = array<i64: 2, 3>, keepdim = true, correction = 0.000000e+00 : f64} : (tensor<1x4x4x256xf32>) -> tensor<1x4x1x1xf32>
  %var = tsr.var %g {dims = array<i64: 2, 3>, keepdim = true, correction = 0.000000e+00 : f64} : (tensor<1x4x4x256xf32>) -> tensor<1x4x1x1xf32>
  // CHECK-NEXT: %[[VAR1:[^ ,:]+]] = tsr.var %[[G]] {dims = array<i64: -2, -1>, keepdim = false, correction = 1.000000e+00 : f64} : (tensor<1x4x4x256xf32>) -> tensor<1x4xf32>
  %var1 = tsr.var %g {dims = array<i64: -2, -1>, keepdim = false, correction = 1.000000e+00 : f64} : (tensor<1x4x4x256xf32>) -> tensor<1x4xf32>
  // CHECK-NEXT: func.return %[[SUM]], %[[ALL]], %[[MEAN]], %[[AMAX]], %[[AMIN]], %[[VAR]], %[[VAR1]] : tensor<1x4x1x1xf32>, tensor<f32>, tensor<2xf32>, tensor<2x1xf32>, tensor<8xi64>, tensor<1x4x1x1xf32>, tensor<1x4xf32>
  func.return %sum, %all, %mean, %amax, %amin, %var, %var1 : tensor<1x4x1x1xf32>, tensor<f32>, tensor<2xf32>, tensor<2x1xf32>, tensor<8xi64>, tensor<1x4x1x1xf32>, tensor<1x4xf32>
// CHECK-NEXT: }
}

// Matrix products, a column-major rhs, a linear layer, and the int8 GEMM with ui8 and i8 lhs.
// CHECK-LABEL: func.func @matmul(
// CHECK-SAME: %[[A:[^ ,:]+]]: tensor<8x16xf32>, %[[BT:[^ ,:]+]]: tensor<16x4xf32, #tsr.layout<[1, 0]>>, %[[BA:[^ ,:]+]]: tensor<2x8x16xbf16>, %[[BB:[^ ,:]+]]: tensor<2x16x4xbf16>, %[[BIAS:[^ ,:]+]]: tensor<4xf32>, %[[FULL:[^ ,:]+]]: tensor<8x4xf32>, %[[QA:[^ ,:]+]]: tensor<32x64xui8>, %[[SA:[^ ,:]+]]: tensor<32x64xi8>, %[[QB:[^ ,:]+]]: tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> (tensor<8x4xf32>, tensor<2x8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<32x16xi32>, tensor<32x16xi32>) {
func.func @matmul(%a: tensor<8x16xf32>, %bt: tensor<16x4xf32, #tsr.layout<[1, 0]>>, %ba: tensor<2x8x16xbf16>, %bb: tensor<2x16x4xbf16>, %bias: tensor<4xf32>, %full: tensor<8x4xf32>, %qa: tensor<32x64xui8>, %sa: tensor<32x64xi8>, %qb: tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> (tensor<8x4xf32>, tensor<2x8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<32x16xi32>, tensor<32x16xi32>) {
  // CHECK-NEXT: %[[MM:[^ ,:]+]] = tsr.matmul %[[A]], %[[BT]] : (tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  %mm = tsr.matmul %a, %bt : (tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  // CHECK-NEXT: %[[BMM:[^ ,:]+]] = tsr.bmm %[[BA]], %[[BB]] : (tensor<2x8x16xbf16>, tensor<2x16x4xbf16>) -> tensor<2x8x4xbf16>
  %bmm = tsr.bmm %ba, %bb : (tensor<2x8x16xbf16>, tensor<2x16x4xbf16>) -> tensor<2x8x4xbf16>
  // CHECK-NEXT: %[[LIN:[^ ,:]+]] = tsr.addmm %[[BIAS]], %[[A]], %[[BT]] : (tensor<4xf32>, tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  %lin = tsr.addmm %bias, %a, %bt : (tensor<4xf32>, tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  // CHECK-NEXT: %[[LIN2:[^ ,:]+]] = tsr.addmm %[[FULL]], %[[A]], %[[BT]] : (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  %lin2 = tsr.addmm %full, %a, %bt : (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
  // CHECK-NEXT: %[[QMM:[^ ,:]+]] = tsr.int_mm %[[QA]], %[[QB]] : (tensor<32x64xui8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
  %qmm = tsr.int_mm %qa, %qb : (tensor<32x64xui8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
  // CHECK-NEXT: %[[SMM:[^ ,:]+]] = tsr.int_mm %[[SA]], %[[QB]] : (tensor<32x64xi8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
  %smm = tsr.int_mm %sa, %qb : (tensor<32x64xi8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
  // CHECK-NEXT: func.return %[[MM]], %[[BMM]], %[[LIN]], %[[LIN2]], %[[QMM]], %[[SMM]] : tensor<8x4xf32>, tensor<2x8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<32x16xi32>, tensor<32x16xi32>
  func.return %mm, %bmm, %lin, %lin2, %qmm, %smm : tensor<8x4xf32>, tensor<2x8x4xbf16>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<32x16xi32>, tensor<32x16xi32>
// CHECK-NEXT: }
}

// Nearest (1-D and 3-D, with scales) and bilinear (align_corners) upsampling.
// CHECK-LABEL: func.func @upsample(
// CHECK-SAME: %[[V:[^ ,:]+]]: tensor<1x8x4x8x8xf32>, %[[X:[^ ,:]+]]: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, %[[S:[^ ,:]+]]: tensor<1x8x16xf16>) -> (tensor<1x8x8x16x16xf32>, tensor<1x8x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x12x12xf32>, tensor<1x8x32xf16>) {
func.func @upsample(%v: tensor<1x8x4x8x8xf32>, %x: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, %s: tensor<1x8x16xf16>) -> (tensor<1x8x8x16x16xf32>, tensor<1x8x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x12x12xf32>, tensor<1x8x32xf16>) {
  // CHECK-NEXT: %[[N3:[^ ,:]+]] = tsr.upsample %[[V]] {mode = "nearest", scales = array<f64: 2.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<1x8x4x8x8xf32>) -> tensor<1x8x8x16x16xf32>
  %n3 = tsr.upsample %v {mode = "nearest", scales = array<f64: 2.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<1x8x4x8x8xf32>) -> tensor<1x8x8x16x16xf32>
  // CHECK-NEXT: %[[BL:[^ ,:]+]] = tsr.upsample %[[X]] {mode = "bilinear", align_corners = true} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x8x8xf32, #tsr.layout<nhwc>>
  %bl = tsr.upsample %x {mode = "bilinear", align_corners = true} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x8x8xf32, #tsr.layout<nhwc>>
  // CHECK-NEXT: %[[BL3:[^ ,:]+]] = tsr.upsample %[[X]] {mode = "bilinear", align_corners = false, scales = array<f64: 3.000000e+00, 3.000000e+00>} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x12x12xf32>
  %bl3 = tsr.upsample %x {mode = "bilinear", align_corners = false, scales = array<f64: 3.000000e+00, 3.000000e+00>} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x12x12xf32>
  // CHECK-NEXT: %[[N1:[^ ,:]+]] = tsr.upsample %[[S]] {mode = "nearest"} : (tensor<1x8x16xf16>) -> tensor<1x8x32xf16>
  %n1 = tsr.upsample %s {mode = "nearest"} : (tensor<1x8x16xf16>) -> tensor<1x8x32xf16>
  // CHECK-NEXT: func.return %[[N3]], %[[BL]], %[[BL3]], %[[N1]] : tensor<1x8x8x16x16xf32>, tensor<1x8x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x12x12xf32>, tensor<1x8x32xf16>
  func.return %n3, %bl, %bl3, %n1 : tensor<1x8x8x16x16xf32>, tensor<1x8x8x8xf32, #tsr.layout<nhwc>>, tensor<1x8x12x12xf32>, tensor<1x8x32xf16>
// CHECK-NEXT: }
}
