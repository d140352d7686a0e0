// assign-layouts: each conv's layout from the target's cost model
// (each target's conv_layouts.py under compiler/targets), made explicit with relayouts.
// RUN: compilerctl opt %s -p "assign-layouts{target=x86}" | filecheck %s
// RUN: compilerctl opt %s -p "assign-layouts{target=metal}" | filecheck %s --check-prefix=METAL
// RUN: compilerctl opt %s -p "assign-layouts{target=x86},free-result-layouts" | filecheck %s --check-prefix=FREE
// RUN: compilerctl opt %s -p "assign-layouts{target=x86},assign-layouts{target=x86}" | filecheck %s
// RUN: not compilerctl opt %s -p "assign-layouts{target=tpu}" 2>&1 | filecheck %s --check-prefix=BAD

// BAD: bad pass options in 'assign-layouts{target=tpu}': target must be one of aarch64, metal, ptx, x86, got 'tpu'

// conv3d f32 on x86 runs channels-last: input and weight relayouted to ndhwc,
// the result relayouted back for the users that want ncdhw.
// CHECK-LABEL: func.func @conv3d_f32(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>, %[[W:[^:]+]]: tensor<8x8x3x3x3xf32, #tsr.layout<ncdhw>>, %[[B:[^:]+]]: tensor<8xf32>)
// CHECK-NEXT: %[[XR:[^ ]+]] = tsr.relayout %[[X]] : ({{.*}}) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[WR:[^ ]+]] = tsr.relayout %[[W]] : ({{.*}}) -> tensor<8x8x3x3x3xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.conv %[[XR]], %[[WR]], %[[B]] {{.*}} -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[YB:[^ ]+]] = tsr.relayout %[[Y]] : (tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
// CHECK-NEXT: tsr.silu %[[YB]] : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>)
// METAL-LABEL: func.func @conv3d_f32(
// METAL: tsr.conv {{.*}} -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// FREE-LABEL: func.func @conv3d_f32(
// FREE: tsr.relayout
// FREE: tsr.conv {{.*}} -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
// FREE-NEXT: %[[YB:[^ ]+]] = tsr.relayout
// FREE-NEXT: tsr.silu %[[YB]]
func.func @conv3d_f32(%x: tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>, %w: tensor<8x8x3x3x3xf32, #tsr.layout<ncdhw>>, %b: tensor<8xf32>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>> {
  %y = tsr.conv %x, %w, %b {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>, tensor<8x8x3x3x3xf32, #tsr.layout<ncdhw>>, tensor<8xf32>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
  %s = tsr.silu %y : (tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
  func.return %s : tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
}

// A conv the graph returns: eager's strides stay (a relayout back before the
// return), unless the result is {tsr.free_layout}, where free-result-layouts
// then returns it ndhwc.
// CHECK-LABEL: func.func @returned_conv(
// CHECK: %[[Y:[^ ]+]] = tsr.conv {{.*}} -> tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[YB:[^ ]+]] = tsr.relayout %[[Y]] : {{.*}} -> tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
// CHECK-NEXT: func.return %[[YB]] : tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
// FREE-LABEL: func.func @returned_conv(
// FREE: func.return %{{[^ ]+}} : tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
func.func @returned_conv(%x: tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, %w: tensor<4x4x1x1x1xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, tensor<4x4x1x1x1xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
  func.return %y : tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
}

// FREE-LABEL: func.func @returned_conv_free(
// FREE-SAME: -> (tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>> {tsr.free_layout})
// FREE: %[[Y:[^ ]+]] = tsr.conv {{.*}} -> tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
// FREE: func.return %[[Y]] : tensor<1x4x2x4x4xf32, #tsr.layout<ndhwc>>
func.func @returned_conv_free(%x: tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, %w: tensor<4x4x1x1x1xf32, #tsr.layout<ncdhw>>) -> (tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>> {tsr.free_layout}) {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>, tensor<4x4x1x1x1xf32, #tsr.layout<ncdhw>>) -> tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
  func.return %y : tensor<1x4x2x4x4xf32, #tsr.layout<ncdhw>>
}

// f32 dense 5x5 conv2d with 128 input channels: oneDNN's channels-last
// kernel gains 1.04x here, less than the relayouts cost; it stays contiguous, and
// the pass does nothing. On Metal, conv2d stays contiguous too.
// CHECK-LABEL: func.func @conv2d_f32_wide(
// CHECK-NOT: tsr.relayout
// CHECK: tsr.conv {{.*}} -> tensor<1x128x8x8xf32, #tsr.layout<nchw>>
// CHECK-NOT: tsr.relayout
// CHECK: func.return
// METAL-LABEL: func.func @conv2d_f32_wide(
// METAL-NOT: tsr.relayout
// METAL: func.return
func.func @conv2d_f32_wide(%x: tensor<1x128x12x12xf32, #tsr.layout<nchw>>, %w: tensor<128x128x5x5xf32, #tsr.layout<nchw>>) -> tensor<1x128x8x8xf32, #tsr.layout<nchw>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x12x12xf32, #tsr.layout<nchw>>, tensor<128x128x5x5xf32, #tsr.layout<nchw>>) -> tensor<1x128x8x8xf32, #tsr.layout<nchw>>
  func.return %y : tensor<1x128x8x8xf32, #tsr.layout<nchw>>
}

// A 3x3 at stride 1 is Winograd's class, which computes channels-last only (1.1x-2.3x
// oneDNN's call from 14x14 up under freezing): channels-last.
// CHECK-LABEL: func.func @conv2d_f32_wide_stride1(
// CHECK: tsr.relayout {{.*}} -> tensor<1x128x10x10xf32, #tsr.layout<nhwc>>
// CHECK: tsr.conv {{.*}} -> tensor<1x128x8x8xf32, #tsr.layout<nhwc>>
func.func @conv2d_f32_wide_stride1(%x: tensor<1x128x10x10xf32, #tsr.layout<nchw>>, %w: tensor<128x128x3x3xf32, #tsr.layout<nchw>>) -> tensor<1x128x8x8xf32, #tsr.layout<nchw>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x10x10xf32, #tsr.layout<nchw>>, tensor<128x128x3x3xf32, #tsr.layout<nchw>>) -> tensor<1x128x8x8xf32, #tsr.layout<nchw>>
  func.return %y : tensor<1x128x8x8xf32, #tsr.layout<nchw>>
}

// CHECK-LABEL: func.func @conv2d_bf16_wide(
// CHECK: tsr.relayout {{.*}} -> tensor<1x128x10x10xbf16, #tsr.layout<nhwc>>
// CHECK: tsr.relayout {{.*}} -> tensor<128x128x3x3xbf16, #tsr.layout<nhwc>>
// CHECK: tsr.conv {{.*}} -> tensor<1x128x8x8xbf16, #tsr.layout<nhwc>>
func.func @conv2d_bf16_wide(%x: tensor<1x128x10x10xbf16, #tsr.layout<nchw>>, %w: tensor<128x128x3x3xbf16, #tsr.layout<nchw>>) -> tensor<1x128x8x8xbf16, #tsr.layout<nchw>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x10x10xbf16, #tsr.layout<nchw>>, tensor<128x128x3x3xbf16, #tsr.layout<nchw>>) -> tensor<1x128x8x8xbf16, #tsr.layout<nchw>>
  func.return %y : tensor<1x128x8x8xbf16, #tsr.layout<nchw>>
}

// A grouped f32 conv2d with 3 channels per group stays contiguous; an input
// that arrives channels-last is relayouted to the layout the conv runs in.
// CHECK-LABEL: func.func @grouped_from_nhwc(
// CHECK-NEXT: tsr.relayout {{.*}} -> tensor<1x24x8x8xf32, #tsr.layout<nchw>>
// CHECK-NEXT: tsr.conv {{.*}} -> tensor<1x24x8x8xf32, #tsr.layout<nchw>>
// CHECK-NEXT: tsr.relayout {{.*}} -> tensor<1x24x8x8xf32, #tsr.layout<nhwc>>
func.func @grouped_from_nhwc(%x: tensor<1x24x8x8xf32, #tsr.layout<nhwc>>, %w: tensor<24x3x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x24x8x8xf32, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x24x8x8xf32, #tsr.layout<nhwc>>, tensor<24x3x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x24x8x8xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x24x8x8xf32, #tsr.layout<nhwc>>
}

// Groups of 4 channels in and out run channelwise on tessera's kernel: channels-last,
// the input as it arrives (only the weight is relayouted).
// CHECK-LABEL: func.func @narrow_groups_from_nhwc(
// CHECK-NEXT: tsr.relayout %w {{.*}} -> tensor<32x4x3x3xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: tsr.conv %x, {{.*}} -> tensor<1x32x8x8xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return
func.func @narrow_groups_from_nhwc(%x: tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, %w: tensor<32x4x3x3xf32, #tsr.layout<nchw>>) -> tensor<1x32x8x8xf32, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 8 : i64} : (tensor<1x32x8x8xf32, #tsr.layout<nhwc>>, tensor<32x4x3x3xf32, #tsr.layout<nchw>>) -> tensor<1x32x8x8xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x32x8x8xf32, #tsr.layout<nhwc>>
}

// conv1d stays as it is (no channels-last kernel measured).
// CHECK-LABEL: func.func @conv1d(
// CHECK-NOT: tsr.relayout
// CHECK: func.return
func.func @conv1d(%x: tensor<1x8x16xf32, #tsr.layout<ncl>>, %w: tensor<8x8x3xf32, #tsr.layout<ncl>>) -> tensor<1x8x14xf32, #tsr.layout<ncl>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1>, padding = array<i64: 0>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<1x8x16xf32, #tsr.layout<ncl>>, tensor<8x8x3xf32, #tsr.layout<ncl>>) -> tensor<1x8x14xf32, #tsr.layout<ncl>>
  func.return %y : tensor<1x8x14xf32, #tsr.layout<ncl>>
}

// ATen's max pool with indices (kept as a call at symbolic sizes: the same op) reads and writes
// channels-last on x86 (15x faster there); its users read through relayouts back, and a
// free result (the indices a training backward reads) is then returned channels-last.
// CHECK-LABEL: func.func @library_max_pool(
// CHECK: %[[XR:[^ ]+]] = tsr.relayout %{{[^ ]+}} : {{.*}} -> tensor<2x8x9x9xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[V:[^ ,]+]], %[[I:[^ ]+]] = tsr.aten_call "aten.max_pool2d_with_indices.default"(%[[XR]]) {{.*}} -> (tensor<2x8x5x5xf32, #tsr.layout<nhwc>>, tensor<2x8x5x5xi64, #tsr.layout<nhwc>>)
// CHECK-DAG: tsr.relayout %[[V]] : {{.*}} -> tensor<2x8x5x5xf32, #tsr.layout<nchw>>
// CHECK-DAG: tsr.relayout %[[I]] : {{.*}} -> tensor<2x8x5x5xi64, #tsr.layout<nchw>>
// FREE-LABEL: func.func @library_max_pool(
// FREE-SAME: -> (tensor<2x8x5x5xf32, #tsr.layout<nchw>>, tensor<2x8x5x5xi64, #tsr.layout<nhwc>> {tsr.free_layout})
// FREE: %[[V:[^ ,]+]], %[[I:[^ ]+]] = tsr.aten_call "aten.max_pool2d_with_indices.default"
// FREE: func.return %{{[^ ]+}}, %[[I]] :
// METAL-LABEL: func.func @library_max_pool(
// METAL-NOT: tsr.relayout
// METAL: func.return
func.func @library_max_pool(%x: tensor<2x8x9x9xf32, #tsr.layout<nchw>>) -> (tensor<2x8x5x5xf32, #tsr.layout<nchw>>, tensor<2x8x5x5xi64, #tsr.layout<nchw>> {tsr.free_layout}) {
  %v, %i = tsr.aten_call "aten.max_pool2d_with_indices.default"(%x) {args = [#tsr.operand<0>, [3 : i64, 3 : i64], [2 : i64, 2 : i64], [1 : i64, 1 : i64]]} : (tensor<2x8x9x9xf32, #tsr.layout<nchw>>) -> (tensor<2x8x5x5xf32, #tsr.layout<nchw>>, tensor<2x8x5x5xi64, #tsr.layout<nchw>>)
  func.return %v, %i : tensor<2x8x5x5xf32, #tsr.layout<nchw>>, tensor<2x8x5x5xi64, #tsr.layout<nchw>>
}
