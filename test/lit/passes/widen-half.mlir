// widen-half: bf16 convs and GEMMs computed in f32; the rounding after each sinks
// through the ops that read it, so the tensors between them stay f32.
// RUN: compilerctl opt %s -p 'widen-half{dtypes="bf16"},dce' | filecheck %s

// A conv, its ReLU, a residual add and a second conv: f32 from the input's
// widening to the one rounding before the return.
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT: %[[X:.+]] = tsr.convert %x : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[W:.+]] = tsr.convert %w : (tensor<4x4x3x3xbf16>) -> tensor<4x4x3x3xf32>
// CHECK-NEXT: %[[Y:.+]] = tsr.conv %[[X]], %[[W]] {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[R:.+]] = tsr.relu %[[Y]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[W2:.+]] = tsr.convert %w : (tensor<4x4x3x3xbf16>) -> tensor<4x4x3x3xf32>
// CHECK-NEXT: %[[Z:.+]] = tsr.conv %[[R]], %[[W2]] {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[S:.+]] = tsr.add %[[Z]], %[[R]] : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[O:.+]] = tsr.convert %[[S]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: func.return %[[O]]
func.func @chain(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  %r = tsr.relu %y : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %z = tsr.conv %r, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  %s = tsr.add %z, %r : (tensor<1x4x8x8xbf16>, tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  func.return %s : tensor<1x4x8x8xbf16>
}

// An op computed in f32 (a BatchNorm's decomposition) reads the conv before its
// rounding, and its own rounding to bf16 sinks into the ReLU; the comparison
// keeps reading the rounded value (torch compares in the tensor's dtype).
// CHECK-LABEL: func.func @opmath(
// CHECK: %[[Y:.+]] = tsr.conv {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[YB:.+]] = tsr.convert %[[Y]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: %[[M:.+]] = tsr.mul %[[Y]], %s : (tensor<1x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[R:.+]] = tsr.relu %[[M]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %[[RB:.+]] = tsr.convert %[[R]] : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: %[[C:.+]] = tsr.cmp gt, %[[YB]], %[[YB]]
// CHECK-NEXT: func.return %[[RB]], %[[C]]
func.func @opmath(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x4x3x3xbf16>, %s: tensor<4x1x1xf32>) -> (tensor<1x4x8x8xbf16>, tensor<1x4x8x8xi1>) {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  %m = tsr.mul %y, %s : (tensor<1x4x8x8xbf16>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %mb = tsr.convert %m : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xbf16>
  %r = tsr.relu %mb : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %c = tsr.cmp gt, %y, %y : (tensor<1x4x8x8xbf16>, tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xi1>
  func.return %r, %c : tensor<1x4x8x8xbf16>, tensor<1x4x8x8xi1>
}

// An upsample only the conv reads runs on the widened input, so that
// fold-upsample-into-conv still finds it; a linear's transposed weight likewise.
// CHECK-LABEL: func.func @moves(
// CHECK-NEXT: %[[X:.+]] = tsr.convert %x : (tensor<1x4x4x4xbf16>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %[[U:.+]] = tsr.upsample %[[X]] {{.*}} -> tensor<1x4x8x8xf32>
// CHECK: tsr.conv %[[U]]
// CHECK-LABEL: func.func @linear(
// CHECK: %[[W:.+]] = tsr.convert %w : (tensor<3x5xbf16>) -> tensor<3x5xf32>
// CHECK-NEXT: %[[T:.+]] = tsr.permute %[[W]] {{.*}} -> tensor<5x3xf32, #tsr.layout<[1, 0]>>
// CHECK: tsr.addmm %{{.+}}, %{{.+}}, %[[T]] : {{.*}} -> tensor<2x3xf32>
func.func @moves(%x: tensor<1x4x4x4xbf16>, %w: tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16> {
  %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x4x4x4xbf16>) -> tensor<1x4x8x8xbf16>
  %y = tsr.conv %u, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  func.return %y : tensor<1x4x8x8xbf16>
}
func.func @linear(%x: tensor<2x5xbf16>, %w: tensor<3x5xbf16>, %b: tensor<3xbf16>) -> tensor<2x3xbf16> {
  %t = tsr.permute %w {dims = array<i64: 1, 0>} : (tensor<3x5xbf16>) -> tensor<5x3xbf16, #tsr.layout<[1, 0]>>
  %y = tsr.addmm %b, %x, %t : (tensor<3xbf16>, tensor<2x5xbf16>, tensor<5x3xbf16, #tsr.layout<[1, 0]>>) -> tensor<2x3xbf16>
  func.return %y : tensor<2x3xbf16>
}

// No conv or GEMM: a rounding the model makes on purpose stays.
// CHECK-LABEL: func.func @deliberate(
// CHECK-NEXT: %[[B:.+]] = tsr.convert %x : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK-NEXT: %[[F:.+]] = tsr.convert %[[B]] : (tensor<8xbf16>) -> tensor<8xf32>
// CHECK-NEXT: func.return %[[F]]
func.func @deliberate(%x: tensor<8xf32>) -> tensor<8xf32> {
  %b = tsr.convert %x : (tensor<8xf32>) -> tensor<8xbf16>
  %f = tsr.convert %b : (tensor<8xbf16>) -> tensor<8xf32>
  func.return %f : tensor<8xf32>
}

// Dynamic sizes: the types keep their `?` dims.
// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT: %[[X:.+]] = tsr.convert %x : (tensor<?x4x?x?xbf16>) -> tensor<?x4x?x?xf32>
// CHECK: %[[Y:.+]] = tsr.conv %[[X]], %{{.+}} {{.*}} -> tensor<?x4x?x?xf32>
// CHECK-NEXT: %[[S:.+]] = tsr.silu %[[Y]] : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
// CHECK-NEXT: %[[O:.+]] = tsr.convert %[[S]] : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xbf16>
// CHECK-NEXT: func.return %[[O]]
func.func @dynamic(%x: tensor<?x4x?x?xbf16>, %w: tensor<4x4x3x3xbf16>) -> tensor<?x4x?x?xbf16> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x4x?x?xbf16>, tensor<4x4x3x3xbf16>) -> tensor<?x4x?x?xbf16>
  %s = tsr.silu %y : (tensor<?x4x?x?xbf16>) -> tensor<?x4x?x?xbf16>
  func.return %s : tensor<?x4x?x?xbf16>
}

// RUN: compilerctl opt %s -p 'widen-half{dtypes="bf16" gemms=false}' | filecheck %s --check-prefix=CONVS
// Without freezing (gemms=false) a GEMM stays bf16, its weight not copied on every call.
// CONVS-LABEL: func.func @linear(
// CONVS: tsr.addmm %b, %x, %t : {{.*}} -> tensor<2x3xbf16>
