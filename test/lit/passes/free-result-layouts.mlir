// The free-result-layouts pass: a result marked {tsr.free_layout} (a training
// forward's saved activation) is returned in the layout that costs least.
// RUN: compilerctl opt %s -p free-result-layouts | filecheck %s
// RUN: compilerctl opt %s -p free-result-layouts,free-result-layouts | filecheck %s

// A free result that only a relayout makes for the return is returned before
// the relayout, and the function's type says so.
// CHECK-LABEL: func.func @before_the_relayout(
// CHECK-SAME: -> (tensor<2x8x4x4xf32, #tsr.layout<nhwc>> {tsr.free_layout}, tensor<2x8x4x4xf32, #tsr.layout<nhwc>>)
// CHECK: %[[C:[^ ]+]] = tsr.silu
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.relayout %[[C]]
// CHECK-NEXT: %[[Z:[^ ]+]] = tsr.relu %[[C]]
// CHECK-NEXT: func.return %[[C]], %[[Z]] : tensor<2x8x4x4xf32, #tsr.layout<nhwc>>, tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
func.func @before_the_relayout(%x: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) {
  %c = tsr.silu %x : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %y = tsr.relayout %c : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %z = tsr.relu %c : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %y, %z : tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
}

// A relayout that others read too stays returned: both layouts are made anyway.
// CHECK-LABEL: func.func @relayout_read_by_others(
// CHECK: func.return %[[Y:[^,]+]], %{{[^ ]+}} : tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>
func.func @relayout_read_by_others(%x: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<2x8x4x4xf32, #tsr.layout<nchw>>) {
  %c = tsr.silu %x : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %y = tsr.relayout %c : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %z = tsr.relu %y : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  func.return %y, %z : tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>
}

// A free result whose every other user reads it through one relayout is
// returned after it: the value is then needed in that layout only.
// CHECK-LABEL: func.func @after_the_relayout(
// CHECK-SAME: -> (tensor<2x8x4x4xf32, #tsr.layout<nhwc>> {tsr.free_layout})
// CHECK: %[[R:[^ ]+]] = tsr.relu
// CHECK-NEXT: %[[T:[^ ]+]] = tsr.relayout %[[R]]
// CHECK: func.return %[[T]] : tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
func.func @after_the_relayout(%x: tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> (tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}) {
  %r = tsr.relu %x : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %t = tsr.relayout %r : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %t : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %r : tensor<2x8x4x4xf32, #tsr.layout<nchw>>
}

// Where another user reads the value in its own layout, or the result is not
// marked, or it is a function argument, it is returned as it is.
// CHECK-LABEL: func.func @as_it_is(
// CHECK-SAME: -> (tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout})
// CHECK: %[[R:[^ ]+]] = tsr.relu
// CHECK: %[[U:[^ ]+]] = tsr.sigmoid %[[R]]
// CHECK: func.return %[[R]], %[[U]], %{{[^ ]+}} : tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>
func.func @as_it_is(%x: tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> (tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}, tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>> {tsr.free_layout}) {
  %r = tsr.relu %x : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %t = tsr.relayout %r : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %t : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %u = tsr.sigmoid %r : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nchw>>
  %v = tsr.relayout %x : (tensor<2x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %r, %u, %x : tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>, tensor<2x8x4x4xf32, #tsr.layout<nchw>>
}
