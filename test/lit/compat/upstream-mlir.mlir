// Upstream MLIR (torch-mlir-opt) parses and verifies tessera's generic form, and tessera reads upstream's back.
// REQUIRES: torch-mlir
// RUN: compilerctl opt %s -p cse --generic | torch-mlir-opt --allow-unregistered-dialect | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | torch-mlir-opt --allow-unregistered-dialect --mlir-print-op-generic | compilerctl opt - -p cse | filecheck %s --check-prefix=BACK

// Upstream keeps tsr ops generic (the dialect is unregistered there), with
// their properties and the #tsr.layout encodings untouched. It sorts
// dictionary entries, hence the {{.*}} between properties.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x64x8x8xf32, #tsr.layout<nchw>>, %[[W:[^:]+]]: tensor<64x64x3x3xf32>, %[[B:[^:]+]]: tensor<64xf32>
// CHECK-SAME: -> (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64xf32>, tensor<1x64x4x4xf32, #tsr.layout<nhwc>>)
// CHECK: %[[C:[^ ]+]] = "tsr.constant"() <{value = 0.000000e+00 : f32}> : () -> f32
// CHECK: %[[R:[^ ]+]] = "tsr.relayout"(%[[X]]) : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK: %[[P:[^ ]+]] = "tsr.pad"(%[[R]], %[[C]]) <{high = array<i64: 0, 0, 1, 1>, low = array<i64: 0, 0, 1, 1>}> : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x10x10xf32, #tsr.layout<nhwc>>
// CHECK: %[[Y:[^ ]+]] = "tsr.conv"(%[[P]], %[[W]], %[[B]]) <{dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>}>
// CHECK-SAME: -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// CHECK: "tsr.gelu"(%[[Y]]) <{approximate = "tanh"}>
// CHECK: "tsr.cmp"({{.*}}) <{predicate = "ge"}> : {{.*}} -> tensor<1x64x8x8xi1>
// CHECK: "tsr.where"
// CHECK: "tsr.var"({{.*}}) <{correction = 0.000000e+00 : f64, dims = array<i64: 2, 3>, keepdim = false}>
// CHECK: "tsr.slice"({{.*}}) <{dim = 2 : i64, end = 8 : i64, start = 0 : i64, step = 2 : i64}>
// CHECK: "tsr.upsample"({{.*}}) <{align_corners = true, mode = "bilinear", scales = array<f64: 5.000000e-01, 5.000000e-01>}>
// CHECK: return
func.func @block(%x: tensor<1x64x8x8xf32, #tsr.layout<nchw>>, %w: tensor<64x64x3x3xf32>, %b: tensor<64xf32>) -> (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64xf32>, tensor<1x64x4x4xf32, #tsr.layout<nhwc>>) {
  %c = tsr.constant 0.000000e+00 : f32
  %r = tsr.relayout %x : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %p = tsr.pad %r, %c {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x10x10xf32, #tsr.layout<nhwc>>
  %y = tsr.conv %p, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x10x10xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %g = tsr.gelu %y {approximate = "tanh"} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %m = tsr.cmp ge, %g, %c : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, f32) -> tensor<1x64x8x8xi1>
  %s = tsr.where %m, %g, %y : (tensor<1x64x8x8xi1>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
  %v = tsr.var %s {dims = array<i64: 2, 3>, keepdim = false, correction = 0.000000e+00 : f64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64xf32>
  %h = tsr.slice %s {dim = 2 : i64, start = 0 : i64, end = 8 : i64, step = 2 : i64} : (tensor<1x64x8x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x4x8xf32, #tsr.layout<nhwc>>
  %u = tsr.upsample %h {mode = "bilinear", align_corners = true, scales = array<f64: 5.000000e-01, 5.000000e-01>} : (tensor<1x64x4x8xf32, #tsr.layout<nhwc>>) -> tensor<1x64x4x4xf32, #tsr.layout<nhwc>>
  func.return %s, %v, %u : tensor<1x64x8x8xf32, #tsr.layout<nhwc>>, tensor<1x64xf32>, tensor<1x64x4x4xf32, #tsr.layout<nhwc>>
}

// CHECK-LABEL: func.func @calls(
// CHECK: "tsr.aten_call"({{.*}}) <{args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.torch<"channels_last">, unit, bf16], callee = "aten.foo.default", kwargs = {dim = -1 : i64}}>
// CHECK-SAME: -> (tensor<4x8xf32, #tsr.layout<[1, 0]>>, none)
// CHECK: "tsr.int_mm"({{.*}}) : (tensor<32x64xui8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
// CHECK: "tsr.addmm"
// CHECK: "tsr.permute"({{.*}}) <{dims = array<i64: 1, 0>}>
// CHECK: "tsr.concat"({{.*}}) <{dim = 0 : i64}>
// CHECK: "tsr.constant"() <{value = dense<1.000000e+00> : tensor<16xf32, #tsr.layout<[0]>>}>
func.func @calls(%x: tensor<4x8xf32>, %q: tensor<32x64xui8>, %k: tensor<64x16xi8, #tsr.layout<[1, 0]>>, %a: tensor<4x16xf32>, %bt: tensor<16x8xf32, #tsr.layout<[1, 0]>>) -> (tensor<4x8xf32, #tsr.layout<[1, 0]>>, tensor<32x16xi32>, tensor<4x8xf32>, tensor<16x4xf32>, tensor<16xf32, #tsr.layout<[0]>>) {
  %r:2 = tsr.aten_call "aten.foo.default"(%x, %x) {args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.torch<"channels_last">, unit, bf16], kwargs = {dim = -1 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32, #tsr.layout<[1, 0]>>, none)
  %i = tsr.int_mm %q, %k : (tensor<32x64xui8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
  %l = tsr.addmm %x, %a, %bt : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<16x8xf32, #tsr.layout<[1, 0]>>) -> tensor<4x8xf32>
  %t = tsr.permute %a {dims = array<i64: 1, 0>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
  %cat = tsr.concat %t {dim = 0 : i64} : (tensor<16x4xf32>) -> tensor<16x4xf32>
  %d = tsr.constant dense<1.000000e+00> : tensor<16xf32, #tsr.layout<[0]>>
  func.return %r#0, %i, %l, %cat, %d : tensor<4x8xf32, #tsr.layout<[1, 0]>>, tensor<32x16xi32>, tensor<4x8xf32>, tensor<16x4xf32>, tensor<16xf32, #tsr.layout<[0]>>
}

// Back in tessera, every op verifies again and prints in its custom form.
// BACK-LABEL: func.func @block(
// BACK: tsr.relayout %{{.*}} : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>) -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// BACK: tsr.conv %{{.*}}, %{{.*}}, %{{.*}} {
// BACK-SAME: -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>
// BACK: tsr.gelu %{{.*}} {approximate = "tanh"}
// BACK: tsr.cmp ge,
// BACK: tsr.upsample
// BACK-LABEL: func.func @calls(
// BACK: tsr.aten_call "aten.foo.default"(%{{.*}}, %{{.*}}) {args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.torch<"channels_last">, unit, bf16], kwargs = {dim = -1 : i64}}
// BACK: tsr.int_mm %{{.*}}, %{{.*}} : (tensor<32x64xui8>, tensor<64x16xi8, #tsr.layout<[1, 0]>>) -> tensor<32x16xi32>
