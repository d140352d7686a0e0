// hoist-relayouts: relayouts climb above layout-agnostic ops toward the
// producer or the graph input.
// RUN: compilerctl opt %s -p hoist-relayouts | filecheck %s
// RUN: compilerctl opt %s -p hoist-relayouts,hoist-relayouts | filecheck %s

// GroupNorm's affine part, SiLU and the causal time pad of a video VAE, in
// front of a channels-last conv3d: the relayout climbs to the graph input;
// every op computes in ndhwc; the broadcast scale is read as it is.
// CHECK-LABEL: func.func @causal_pad_chain(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>, %[[S:[^:]+]]: tensor<1x8x1x1x1xf32, #tsr.layout<ncdhw>>
// CHECK-NEXT: %[[F:[^ ]+]] = tsr.constant
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %[[X]] : ({{.*}}) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mul %[[XR]], %[[S]] : (tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>, tensor<1x8x1x1x1xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[A:[^ ]+]] = tsr.silu %[[M]] : {{.*}} -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[P:[^ ]+]] = tsr.pad %[[A]], %[[F]] {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %[[P]]
// CHECK-NOT: tsr.relayout
func.func @causal_pad_chain(%x: tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>, %s: tensor<1x8x1x1x1xf32, #tsr.layout<ncdhw>>, %w: tensor<8x8x3x3x3xf32, #tsr.layout<ndhwc>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>> {
  %f = tsr.constant 0.000000e+00 : f32
  %m = tsr.mul %x, %s : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>, tensor<1x8x1x1x1xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
  %a = tsr.silu %m : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
  %p = tsr.pad %a, %f {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>, f32) -> tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>
  %r = tsr.relayout %p : (tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
  %y = tsr.conv %r, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>, tensor<8x8x3x3x3xf32, #tsr.layout<ndhwc>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
  func.return %y : tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
}

// Both operands of a binary op have the result's shape: both follow; a
// convert is hoisted through too.
// CHECK-LABEL: func.func @binary_and_convert(
// CHECK-SAME: %[[A:[^:]+]]: tensor<1x8x4x4xbf16, #tsr.layout<nchw>>, %[[B:[^:]+]]: tensor<1x8x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[AR:[^ ]+]] = tsr.relayout %[[A]] : ({{.*}}) -> tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.convert %[[AR]] : ({{.*}}) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[BR:[^ ]+]] = tsr.relayout %[[B]] : ({{.*}}) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.add %[[C]], %[[BR]] : {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return %[[S]]
func.func @binary_and_convert(%a: tensor<1x8x4x4xbf16, #tsr.layout<nchw>>, %b: tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>> {
  %c = tsr.convert %a : (tensor<1x8x4x4xbf16, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %s = tsr.add %c, %b : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %r = tsr.relayout %s : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %r : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
}

// A pad with two users that want different layouts (a channels-last conv and
// the graph output, whose strides eager fixes) is left alone.
// CHECK-LABEL: func.func @pad_two_layouts(
// CHECK: %[[P:[^ ]+]] = tsr.pad {{.*}} -> tensor<1x8x6x6xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[P]] : {{.*}} -> tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: tsr.conv %[[R]]
// CHECK: func.return {{.*}}, %[[P]] :
func.func @pad_two_layouts(%x: tensor<1x8x4x4xf32, #tsr.layout<nchw>>, %w: tensor<8x8x3x3xf32, #tsr.layout<nhwc>>) -> (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x6x6xf32, #tsr.layout<nchw>>) {
  %f = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %f {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, f32) -> tensor<1x8x6x6xf32, #tsr.layout<nchw>>
  %r = tsr.relayout %p : (tensor<1x8x6x6xf32, #tsr.layout<nchw>>) -> tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %r, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x6x6xf32, #tsr.layout<nhwc>>, tensor<8x8x3x3xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %y, %p : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x6x6xf32, #tsr.layout<nchw>>
}

// Two users that both want nhwc share one relayout above the pad.
// CHECK-LABEL: func.func @pad_two_agreeing(
// CHECK-NEXT: tsr.constant
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %{{[^ ]+}} : {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[P:[^ ]+]] = tsr.pad %[[XR]], {{.*}} -> tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
// CHECK-NOT: tsr.relayout
// CHECK: func.return %[[P]], %[[P]] :
func.func @pad_two_agreeing(%x: tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> (tensor<1x8x6x6xf32, #tsr.layout<nhwc>>, tensor<1x8x6x6xf32, #tsr.layout<nhwc>>) {
  %f = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %f {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, f32) -> tensor<1x8x6x6xf32, #tsr.layout<nchw>>
  %r1 = tsr.relayout %p : (tensor<1x8x6x6xf32, #tsr.layout<nchw>>) -> tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
  %r2 = tsr.relayout %p : (tensor<1x8x6x6xf32, #tsr.layout<nchw>>) -> tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
  func.return %r1, %r2 : tensor<1x8x6x6xf32, #tsr.layout<nhwc>>, tensor<1x8x6x6xf32, #tsr.layout<nhwc>>
}

// A reduction over spatial dims (keepdim) is hoisted through: nchw -> nhwc
// moves only the channels. A reduction over the channel dim is left alone. A
// global pool's result is the same memory in both layouts: its relayout is a
// view and stays below it (moving it up would transpose the pool's input).
// CHECK-LABEL: func.func @reductions(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x8x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %[[X]] : {{.*}} -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[H:[^ ]+]] = tsr.mean %[[XR]] {dims = array<i64: 2>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x1x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.sum %[[X]] {dims = array<i64: 1>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x1x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[SR:[^ ]+]] = tsr.relayout %[[S]] : {{.*}} -> tensor<2x1x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mean %[[X]] {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x1x1xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[MR:[^ ]+]] = tsr.relayout %[[M]] : {{.*}} -> tensor<2x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return %[[H]], %[[SR]], %[[MR]] :
func.func @reductions(%x: tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> (tensor<2x8x1x4xf32, #tsr.layout<nhwc>>, tensor<2x1x4x4xf32, #tsr.layout<nhwc>>, tensor<2x8x1x1xf32, #tsr.layout<nhwc>>) {
  %h = tsr.mean %x {dims = array<i64: 2>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x1x4xf32, #tsr.layout<nchw>>
  %hr = tsr.relayout %h : (tensor<2x8x1x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x1x4xf32, #tsr.layout<nhwc>>
  %s = tsr.sum %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x1x4x4xf32, #tsr.layout<nchw>>
  %sr = tsr.relayout %s : (tensor<2x1x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x1x4x4xf32, #tsr.layout<nhwc>>
  %m = tsr.mean %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x1x1xf32, #tsr.layout<nchw>>
  %mr = tsr.relayout %m : (tensor<2x8x1x1xf32, #tsr.layout<nchw>>) -> tensor<2x8x1x1xf32, #tsr.layout<nhwc>>
  func.return %hr, %sr, %mr : tensor<2x8x1x4xf32, #tsr.layout<nhwc>>, tensor<2x1x4x4xf32, #tsr.layout<nhwc>>, tensor<2x8x1x1xf32, #tsr.layout<nhwc>>
}

// The last stage of a residual network after assign-layouts: channels-last
// convs, residual adds and relus in nchw, the chain ending in a global mean.
// The mean reads nhwc (its result's relayout back is a view), and the
// relayouts climb the chain: every add and relu computes channels-last.
// CHECK-LABEL: func.func @residual_chain_into_pool(
// CHECK: %[[A1:[^ ]+]] = tsr.add {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK: %[[R1:[^ ]+]] = tsr.relu %[[A1]] : {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK: %[[A2:[^ ]+]] = tsr.add {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK: %[[R2:[^ ]+]] = tsr.relu %[[A2]] : {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.mean %[[R2]] {{.*}} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[MR:[^ ]+]] = tsr.relayout %[[M]] : {{.*}} -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
// CHECK-NEXT: func.return %[[MR]] :
func.func @residual_chain_into_pool(%x: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, %w1: tensor<8x8x1x1xf32, #tsr.layout<nhwc>>, %w2: tensor<8x8x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>> {
  %c0 = tsr.conv %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<8x8x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b0 = tsr.relayout %c0 : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %xb = tsr.relayout %x : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %a1 = tsr.add %xb, %b0 : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %r1 = tsr.relu %a1 : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %i1 = tsr.relayout %r1 : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %c1 = tsr.conv %i1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<8x8x1x1xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b1 = tsr.relayout %c1 : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %a2 = tsr.add %r1, %b1 : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %r2 = tsr.relu %a2 : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %m = tsr.mean %r2 {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
  func.return %m : tensor<1x8x1x1xf32, #tsr.layout<nchw>>
}

// Where the ops before a global pool have users in their own layout (the
// graph returns the relu), the pool reads that layout: nothing would move.
// CHECK-LABEL: func.func @pool_of_a_returned_value(
// CHECK: %[[R:[^ ]+]] = tsr.relu {{.*}} -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: tsr.mean %[[R]] {{.*}} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
func.func @pool_of_a_returned_value(%x: tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>) {
  %xb = tsr.relayout %x : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %r = tsr.relu %xb : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %m = tsr.mean %r {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
  func.return %m, %r : tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>
}

// A training BatchNorm's statistics of a channels-last conv result relayouted to
// nchw read the conv's result itself: each pooled result is the same memory in
// either layout, and the relayout they read goes with cancel-relayouts.
// CHECK-LABEL: func.func @statistics_of_a_relayout(
// CHECK-SAME: %[[C:[^:]+]]: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-DAG: tsr.var %{{[^ ]+}} {{.*}} : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x1x1xf32, #tsr.layout<nhwc>>
// CHECK-DAG: tsr.mean %{{[^ ]+}} {{.*}} : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x1x1xf32, #tsr.layout<nhwc>>
func.func @statistics_of_a_relayout(%c: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>) {
  %r = tsr.relayout %c : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %v = tsr.var %r {dims = array<i64: 0, 2, 3>, keepdim = true, correction = 0.0 : f64} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
  %m = tsr.mean %r {dims = array<i64: 0, 2, 3>, keepdim = true} : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x1x1xf32, #tsr.layout<nchw>>
  %s = tsr.sub %r, %m : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<1x8x1x1xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  func.return %v, %m, %s : tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<1x8x1x1xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>
}

// A library op (conv) or a reshape does not move a relayout: the conv's
// layout is the library's, and a reshape changes the dims a layout names.
// CHECK-LABEL: func.func @stops_at_library_and_reshape(
// CHECK: %[[Y:[^ ]+]] = tsr.conv
// CHECK-NEXT: tsr.relayout %[[Y]]
// CHECK: %[[V:[^ ]+]] = tsr.reshape
// CHECK-NEXT: tsr.relayout %[[V]]
func.func @stops_at_library_and_reshape(%x: tensor<1x8x4x4xf32, #tsr.layout<nchw>>, %w: tensor<8x8x1x1xf32, #tsr.layout<nchw>>, %v: tensor<1x8x16xf32, #tsr.layout<ncl>>) -> (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>, tensor<8x8x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %yr = tsr.relayout %y : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %r = tsr.reshape %v : (tensor<1x8x16xf32, #tsr.layout<ncl>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %rr = tsr.relayout %r : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %yr, %rr : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
}

// Upsample and slice keep their rank and the dims' meaning: hoisted through.
// CHECK-LABEL: func.func @upsample_slice(
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %{{[^ ]+}} : {{.*}} -> tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[U:[^ ]+]] = tsr.upsample %[[XR]] {{.*}} -> tensor<1x4x2x8x8xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.slice %[[U]] {{.*}} -> tensor<1x4x1x8x8xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: func.return %[[S]]
func.func @upsample_slice(%x: tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x1x8x8xf32, #tsr.layout<ndhwc>> {
  %u = tsr.upsample %x {mode = "nearest", scales = array<f64: 1.0, 2.0, 2.0>} : (tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x2x8x8xf32, #tsr.layout<ncdhw>>
  %s = tsr.slice %u {dim = 2 : i64, start = 1 : i64, end = 2 : i64, step = 1 : i64} : (tensor<1x4x2x8x8xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x1x8x8xf32, #tsr.layout<ncdhw>>
  %r = tsr.relayout %s : (tensor<1x4x1x8x8xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x1x8x8xf32, #tsr.layout<ndhwc>>
  func.return %r : tensor<1x4x1x8x8xf32, #tsr.layout<ndhwc>>
}

// ATen's pools (kept as tsr.aten_call) compute in their input's memory format: a
// relayout to channels-last climbs above a max pool; a layout other than nchw/nhwc,
// and an aten_call that is not a pool, stay where they are.
// CHECK-LABEL: func.func @max_pool(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x16x16xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %[[X]] : ({{.*}}) -> tensor<1x8x16x16xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[P:[^ ]+]] = tsr.aten_call "aten.max_pool2d.default"(%[[XR]]) {{.*}} -> tensor<1x8x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return %[[P]]
func.func @max_pool(%x: tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<nhwc>> {
  %p = tsr.aten_call "aten.max_pool2d.default"(%x) {args = [#tsr.operand<0>, [2 : i64, 2 : i64]]} : (tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<nchw>>
  %r = tsr.relayout %p : (tensor<1x8x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<nhwc>>
  func.return %r : tensor<1x8x8x8xf32, #tsr.layout<nhwc>>
}

// CHECK-LABEL: func.func @not_a_pool(
// CHECK-NEXT: tsr.aten_call "aten.cumsum.default"
// CHECK-NEXT: tsr.relayout
// CHECK-LABEL: func.func @other_layout(
// CHECK-NEXT: tsr.aten_call "aten.max_pool2d.default"
// CHECK-NEXT: tsr.relayout
func.func @not_a_pool(%x: tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x16x16xf32, #tsr.layout<nhwc>> {
  %p = tsr.aten_call "aten.cumsum.default"(%x) {args = [#tsr.operand<0>, 3 : i64]} : (tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x16x16xf32, #tsr.layout<nchw>>
  %r = tsr.relayout %p : (tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x16x16xf32, #tsr.layout<nhwc>>
  func.return %r : tensor<1x8x16x16xf32, #tsr.layout<nhwc>>
}

func.func @other_layout(%x: tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<[0, 3, 2, 1]>> {
  %p = tsr.aten_call "aten.max_pool2d.default"(%x) {args = [#tsr.operand<0>, [2 : i64, 2 : i64]]} : (tensor<1x8x16x16xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<nchw>>
  %r = tsr.relayout %p : (tensor<1x8x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x8x8x8xf32, #tsr.layout<[0, 3, 2, 1]>>
  func.return %r : tensor<1x8x8x8xf32, #tsr.layout<[0, 3, 2, 1]>>
}
