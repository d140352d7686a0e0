// A reshape of dynamic sizes whose dynamic dims are one input dim each
// (dim_sources.reshape_anchors) fuses: it reads its sizes inside the group from
// its own input, and the host's tsr.dim that fed it, read from the earliest
// tensor of that size (dim_origin), is dropped once nothing reads it. The
// kernel lowering indexes through it (index_maps.anchored_reshape).
// RUN: compilerctl opt %s -p fuse-kernels | filecheck %s
// RUN: compilerctl opt %s -p fuse-kernels,fuse-kernels | filecheck %s
// RUN: compilerctl dump %s --stage kernel --target x86 | filecheck %s --check-prefix=KERNEL

// CHECK-LABEL: func.func @squeeze_frames(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>
// CHECK-NOT: tsr.dim
// CHECK: %[[Y:[^ ]+]] = tsr.fused (%[[X]]) : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x?x?xf32, #tsr.layout<nhwc>> {
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>):
// CHECK-NEXT: tsr.exp %[[A]]
// CHECK-NEXT: %[[H:[^ ]+]] = tsr.dim %{{[^ ]+}} {dim = 3 : i64}
// CHECK-NEXT: %[[W:[^ ]+]] = tsr.dim %{{[^ ]+}} {dim = 4 : i64}
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.reshape %{{[^,]+}}, %[[H]], %[[W]] : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>, i64, i64) -> tensor<1x8x?x?xf32, #tsr.layout<nchw>>
// CHECK-NEXT: %[[L:[^ ]+]] = tsr.relayout %[[R]]
// CHECK-NEXT: tsr.yield %[[L]]
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[Y]]
// KERNEL: func.func @fused_0(%in0: memref<1x1x8x?x?xf32
// KERNEL: memref.load %in0[%{{[0-9]+}}, %{{[0-9]+}}, %[[C:[0-9]+]], %[[H:[0-9]+]], %[[W:[0-9]+]]]
// KERNEL: memref.store %{{[0-9]+}}, %out0[%{{[0-9]+}}, %[[C]], %[[H]], %[[W]]]
func.func @squeeze_frames(%x: tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x?x?xf32, #tsr.layout<nhwc>> {
  %e = tsr.exp %x : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>) -> tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>
  %h = tsr.dim %e {dim = 3 : i64} : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>) -> i64
  %w = tsr.dim %e {dim = 4 : i64} : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>) -> i64
  %r = tsr.reshape %e, %h, %w : (tensor<1x1x8x?x?xf32, #tsr.layout<ncdhw>>, i64, i64) -> tensor<1x8x?x?xf32, #tsr.layout<nchw>>
  %y = tsr.relayout %r : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>) -> tensor<1x8x?x?xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x8x?x?xf32, #tsr.layout<nhwc>>
}

// A reshape into a product of dynamic dims (h * w) has no anchors: it stays on the host.
// CHECK-LABEL: func.func @flatten_pixels(
// CHECK: tsr.fused
// CHECK: tsr.reshape %{{[^,]+}}, %{{[^ ]+}} : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>, i64) -> tensor<1x8x?xf32, #tsr.layout<ncl>>
// CHECK-NEXT: func.return
func.func @flatten_pixels(%x: tensor<1x8x?x?xf32, #tsr.layout<nchw>>) -> tensor<1x8x?xf32, #tsr.layout<ncl>> {
  %e = tsr.exp %x : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>) -> tensor<1x8x?x?xf32, #tsr.layout<nchw>>
  %h = tsr.dim %x {dim = 2 : i64} : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>) -> i64
  %w = tsr.dim %x {dim = 3 : i64} : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>) -> i64
  %n = arith.muli %h, %w : i64
  %r = tsr.reshape %e, %n : (tensor<1x8x?x?xf32, #tsr.layout<nchw>>, i64) -> tensor<1x8x?xf32, #tsr.layout<ncl>>
  func.return %r : tensor<1x8x?xf32, #tsr.layout<ncl>>
}

// A reshape that only drops dims of size 1, reading its dims other than 1 in its
// input's memory order, views its input at every size: alone, it stays on the host
// (fuse_kernels._unit_reshape_source), as a static one does, not a copy kernel.
// A squeeze-excite's gradient reshaped for its GEMM:
// CHECK-LABEL: func.func @squeeze_unit_dims(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x48x1x1xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[N:[^ ]+]] = tsr.dim %[[X]] {dim = 0 : i64}
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.reshape %[[X]], %[[N]] : (tensor<?x48x1x1xf32, #tsr.layout<nhwc>>, i64) -> tensor<?x48xf32>
// CHECK-NEXT: tsr.matmul %[[R]]
func.func @squeeze_unit_dims(%x: tensor<?x48x1x1xf32, #tsr.layout<nhwc>>, %w: tensor<48x16xf32>) -> tensor<?x16xf32> {
  %n = tsr.dim %x {dim = 0 : i64} : (tensor<?x48x1x1xf32, #tsr.layout<nhwc>>) -> i64
  %r = tsr.reshape %x, %n : (tensor<?x48x1x1xf32, #tsr.layout<nhwc>>, i64) -> tensor<?x48xf32>
  %m = tsr.matmul %r, %w : (tensor<?x48xf32>, tensor<48x16xf32>) -> tensor<?x16xf32>
  func.return %m : tensor<?x16xf32>
}

// The same dims read in another order (channels first in memory, channels last in
// the result's layout) is a copy.
// CHECK-LABEL: func.func @squeeze_unit_dims_transposed(
// CHECK-NEXT: tsr.fused
// CHECK: tsr.reshape
// CHECK-NEXT: tsr.yield
func.func @squeeze_unit_dims_transposed(%x: tensor<?x48x1x1xf32, #tsr.layout<nhwc>>, %w: tensor<48x16xf32>) -> tensor<?x16xf32> {
  %n = tsr.dim %x {dim = 0 : i64} : (tensor<?x48x1x1xf32, #tsr.layout<nhwc>>) -> i64
  %r = tsr.reshape %x, %n : (tensor<?x48x1x1xf32, #tsr.layout<nhwc>>, i64) -> tensor<?x48xf32, #tsr.layout<[1, 0]>>
  %m = tsr.matmul %r, %w : (tensor<?x48xf32, #tsr.layout<[1, 0]>>, tensor<48x16xf32>) -> tensor<?x16xf32>
  func.return %m : tensor<?x16xf32>
}
