// fold-relayouts-into-convs: a conv tessera's kernel computes (an x86 CPU with
// AVX2 and FMA, named by the features: no host is asked) reads its NCHW input
// directly with up to 64 input channels (a stem's few too), and writes NCHW itself:
// the relayouts go; with 128 input channels the cost model keeps the relayout (the
// plane-sized channel step costs what it saves). A CPU the kernel cannot run on (SSE
// only) keeps every relayout.
// RUN: compilerctl opt %s -p 'fold-relayouts-into-convs{target=x86 features="+avx2,+fma"}' | filecheck %s
// RUN: compilerctl opt %s -p 'fold-relayouts-into-convs{target=x86 features="+sse4.2"}' | filecheck %s --check-prefix=NONE

// NONE-LABEL: func.func @first_conv(
// NONE: tsr.relayout
// NONE-LABEL: func.func @last_conv(
// NONE: tsr.relayout

// CHECK-LABEL: func.func @first_conv(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x32x10x12xf32, #tsr.layout<nchw>>
// CHECK-NOT: tsr.relayout
// CHECK: tsr.conv %[[X]], {{.*}} : (tensor<1x32x10x12xf32, #tsr.layout<nchw>>, {{.*}} -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
func.func @first_conv(%x: tensor<1x32x10x12xf32, #tsr.layout<nchw>>, %w: tensor<32x32x3x3xf32>, %b: tensor<32xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>> {
  %xn = tsr.relayout %x : (tensor<1x32x10x12xf32, #tsr.layout<nchw>>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %xn, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x32x10x12xf32, #tsr.layout<nhwc>>, tensor<32x32x3x3xf32>, tensor<32xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
}

// CHECK-LABEL: func.func @few_channels(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x3x10x12xf32, #tsr.layout<nchw>>
// CHECK-NOT: tsr.relayout
// CHECK: tsr.conv %[[X]],
func.func @few_channels(%x: tensor<1x3x10x12xf32, #tsr.layout<nchw>>, %w: tensor<32x3x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>> {
  %xn = tsr.relayout %x : (tensor<1x3x10x12xf32, #tsr.layout<nchw>>) -> tensor<1x3x10x12xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %xn, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x10x12xf32, #tsr.layout<nhwc>>, tensor<32x3x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
}

// CHECK-LABEL: func.func @many_channels(
// CHECK: %[[XN:.+]] = tsr.relayout
// CHECK: tsr.conv %[[XN]],
func.func @many_channels(%x: tensor<1x128x10x12xf32, #tsr.layout<nchw>>, %w: tensor<32x128x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>> {
  %xn = tsr.relayout %x : (tensor<1x128x10x12xf32, #tsr.layout<nchw>>) -> tensor<1x128x10x12xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %xn, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x128x10x12xf32, #tsr.layout<nhwc>>, tensor<32x128x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
}

// The relayout after the conv: the conv writes NCHW itself.
// CHECK-LABEL: func.func @last_conv(
// CHECK-NOT: tsr.relayout
// CHECK: %[[Z:.+]] = tsr.conv {{.*}} -> tensor<1x32x10x12xf32, #tsr.layout<nchw>>
// CHECK-NEXT: func.return %[[Z]]
func.func @last_conv(%x: tensor<1x32x10x12xf32, #tsr.layout<nhwc>>, %w: tensor<32x32x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nchw>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x32x10x12xf32, #tsr.layout<nhwc>>, tensor<32x32x3x3xf32>) -> tensor<1x32x10x12xf32, #tsr.layout<nhwc>>
  %z = tsr.relayout %y : (tensor<1x32x10x12xf32, #tsr.layout<nhwc>>) -> tensor<1x32x10x12xf32, #tsr.layout<nchw>>
  func.return %z : tensor<1x32x10x12xf32, #tsr.layout<nchw>>
}
