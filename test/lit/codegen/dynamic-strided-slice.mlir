// Strided slices of dynamic dims inside a kernel (a 2x2, stride-2 max pool's
// window slices of its padded input, as `fx_import/pooling.py` writes them at
// symbolic sizes): a slice's size is ceil((n + end - start) / step), a source
// `(input, dim, mul, add, div)` that composes with the pad's `n + 2`, so the
// host allocates the result as (H + 2) // 2 x (W + 2) // 2 and the kernel
// reads the sizes from its output, with no host slice between the ops.
// RUN: compilerctl dump %s --target x86 --stage kernel | filecheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-NEXT: tsr.launch @fused_0(%x) {tsr.result_dims = [array<i64: 0, 0, 1, 0, 1, -1, 0, 0, 8, 1, 0, 2, 1, 2, 2, 0, 3, 1, 2, 2>]}
// CHECK-NOT: tsr.slice
// CHECK: func.return
// CHECK-LABEL: func.func @fused_0(
// CHECK: memref.dim %out0
// CHECK: scf.parallel
// CHECK: arith.maximumf
func.func @forward(%x: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>> {
  %ninf = tsr.constant 0xFF800000 : f32
  %p = tsr.pad %x, %ninf {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, f32) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %a = tsr.slice %p {dim = 2 : i64, start = 0 : i64, end = -1 : i64, step = 2 : i64} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %b = tsr.slice %a {dim = 3 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %c = tsr.slice %p {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %d = tsr.slice %c {dim = 3 : i64, start = 0 : i64, end = -1 : i64, step = 2 : i64} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %m = tsr.maximum %b, %d : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  func.return %m : tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
}
