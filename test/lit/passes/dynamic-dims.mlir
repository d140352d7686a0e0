// The x86 graph and fusion pipelines on dynamic dims (`?`: a batch and spatial
// sizes known at run time). What the passes decide from static facts still
// happens: the affine after the conv folds into its weight and bias, the conv
// goes channels-last (its channels and kernel are static), the relayouts are
// hoisted and fused, SiLU becomes the conv's epilogue, and the pointwise
// groups become fused kernels of dynamic sizes.
// RUN: compilerctl opt %s --target x86 | filecheck %s --check-prefix=GRAPH
// RUN: compilerctl opt %s --target x86 | compilerctl opt - -p 'fold-relayouts-into-convs{target=x86 features="+avx2,+fma"},fuse-conv-residuals{target=x86 features="+avx2,+fma"},fuse-conv-epilogues,fuse-int-mm-epilogues,dce,select-impl{target=x86 features="+avx2,+fma"},fuse-kernels' | filecheck %s --check-prefix=FUSED

// GRAPH-LABEL: func.func @block(
// GRAPH: %[[W:[^ ]+]] = tsr.mul %w, {{.*}} -> tensor<64x32x3x3xf32, #tsr.layout<nhwc>>
// GRAPH: %[[X:[^ ]+]] = tsr.relayout %x : (tensor<?x32x?x?xf32>) -> tensor<?x32x?x?xf32, #tsr.layout<nhwc>>
// GRAPH: %[[C:[^ ]+]] = tsr.conv %[[X]], %[[W]], {{.*}} -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
// GRAPH-NEXT: %[[S:[^ ]+]] = tsr.silu %[[C]] : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x64x?x?xf32>
// GRAPH-NEXT: tsr.upsample %[[S]]
// GRAPH-NOT: tsr.relayout

// The conv's weight is small (18432 elements: packed per call at any size), so
// tessera's x86 kernel computes it (a kernel per size at run time) and reads the
// NCHW input itself: the relayout folds into the conv.
// FUSED-LABEL: func.func @block(
// FUSED-NOT: tsr.fused (%x)
// FUSED: tsr.conv %x, {{.*}}tsr.impl = "avx2"{{.*}}activation = "silu"{{.*}} : (tensor<?x32x?x?xf32>, {{.*}} -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
// FUSED: tsr.fused ({{.*}}) : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x64x?x?xf32> {
// FUSED: tsr.relayout
// FUSED-NEXT: tsr.upsample
func.func @block(%x: tensor<?x32x?x?xf32>, %w: tensor<64x32x3x3xf32>, %b: tensor<64xf32>, %scale: tensor<64x1x1xf32>,
                 %shift: tensor<64x1x1xf32>) -> tensor<?x64x?x?xf32> {
  %c = tsr.conv %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x32x?x?xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<?x64x?x?xf32>
  %m = tsr.mul %c, %scale : (tensor<?x64x?x?xf32>, tensor<64x1x1xf32>) -> tensor<?x64x?x?xf32>
  %a = tsr.add %m, %shift : (tensor<?x64x?x?xf32>, tensor<64x1x1xf32>) -> tensor<?x64x?x?xf32>
  %s = tsr.silu %a : (tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
  %u = tsr.upsample %s {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
  func.return %u : tensor<?x64x?x?xf32>
}
