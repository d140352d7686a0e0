// GPU kernels take one thread per point at sizes known only at run time
// (codegen/gpu.py::thread_per_point): a pointwise kernel's inner loop, here over
// the dynamic W (`memref.dim %out0, 3`), becomes the innermost grid dim, the
// grid's dynamic extents kept as they are; the channel mean's loops carry sums
// and stay, a block of lanes per (n, c) sharing them (codegen/gpu_reductions.py).
// RUN: compilerctl dump %s --target ptx --stage kernel | filecheck %s

// CHECK-LABEL: func.func @fused_0(
// CHECK-SAME: tsr.threads_per_point = 256
// CHECK: "scf.parallel"
// CHECK: %[[LANE:[0-9]+]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK: %[[START:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[LANE]]
// CHECK: scf.for {{.*}} = %[[START]] to {{.*}} iter_args
// CHECK: "gpu.all_reduce"
// CHECK: arith.addf {{.*}} fastmath<reassoc>

// CHECK-LABEL: func.func @fused_1(
// CHECK: %[[N:[0-9]+]] = memref.dim %out0, %{{[0-9]+}}
// CHECK: %[[H:[0-9]+]] = memref.dim %out0, %{{[0-9]+}}
// CHECK: %[[W:[0-9]+]] = memref.dim %out0, %{{[0-9]+}}
// CHECK: %[[C8:[0-9]+]] = arith.constant 8 : index
// CHECK: "scf.parallel"(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[N]], %[[H]], %[[C8]], %[[W]], {{.*}}operandSegmentSizes = array<i32: 4, 4, 4, 0>
// CHECK-NEXT: ^bb0(%[[I:[0-9]+]]: index, %[[Y:[0-9]+]]: index, %[[C:[0-9]+]]: index, %[[X:[0-9]+]]: index):
// CHECK-NOT: scf.for
// CHECK: memref.store {{.*}}, %out0[%[[I]], %[[C]], %[[Y]], %[[X]]]
// CHECK-NEXT: scf.reduce

func.func @forward(%x: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32> {
  %m = tsr.mean %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x1x1xf32>
  %d = tsr.sub %x, %m : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, tensor<?x8x1x1xf32>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %d : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %r = tsr.relayout %s {layout = #tsr.layout<nchw>} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32>
  func.return %r : tensor<?x8x?x?xf32>
}
