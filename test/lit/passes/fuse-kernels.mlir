// The fuse-kernels pass: pointwise, data-movement and reduction ops become tsr.fused groups; library ops bound them.
// RUN: compilerctl opt %s -p fuse-kernels | filecheck %s
// RUN: compilerctl opt %s -p fuse-kernels,fuse-kernels | filecheck %s

// GroupNorm + SiLU: one reduction kernel (var and mean of one value share it,
// with the reshape as its prologue), then one pointwise kernel that reads the
// statistics and recomputes the eps/rsqrt per element.
// CHECK-LABEL: func.func @groupnorm(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[V:[^ ,]+]], %[[M:[^ ,]+]] = tsr.fused (%[[X]]) : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> (tensor<2x2x1xf32>, tensor<2x2x1xf32>) {
// CHECK-NEXT: ^bb0(%[[A:[^:]+]]: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>):
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.reshape %[[A]]
// CHECK-NEXT: %[[V1:[^ ]+]] = tsr.var %[[R]]
// CHECK-NEXT: %[[M1:[^ ]+]] = tsr.mean %[[R]]
// CHECK-NEXT: tsr.yield %[[V1]], %[[M1]] : tensor<2x2x1xf32>, tensor<2x2x1xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.fused (%[[X]], %[[V]], %[[M]]) : {{.*}} -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>> {
// CHECK-NOT: tsr.var
// CHECK: tsr.constant 1.000000e-05 : f32
// CHECK: tsr.rsqrt
// CHECK: %[[S:[^ ]+]] = tsr.silu
// CHECK-NEXT: tsr.yield %[[S]] : tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[Y]] : tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
func.func @groupnorm(%x: tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>> {
  %r = tsr.reshape %x : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x2x64xf32>
  %v = tsr.var %r {dims = array<i64: 2>, keepdim = true, correction = 0.0 : f64} : (tensor<2x2x64xf32>) -> tensor<2x2x1xf32>
  %m = tsr.mean %r {dims = array<i64: 2>, keepdim = true} : (tensor<2x2x64xf32>) -> tensor<2x2x1xf32>
  %eps = tsr.constant 1.000000e-05 : f32
  %ve = tsr.add %v, %eps : (tensor<2x2x1xf32>, f32) -> tensor<2x2x1xf32>
  %rs = tsr.rsqrt %ve : (tensor<2x2x1xf32>) -> tensor<2x2x1xf32>
  %d = tsr.sub %r, %m : (tensor<2x2x64xf32>, tensor<2x2x1xf32>) -> tensor<2x2x64xf32>
  %n = tsr.mul %d, %rs : (tensor<2x2x64xf32>, tensor<2x2x1xf32>) -> tensor<2x2x64xf32>
  %n4 = tsr.reshape %n : (tensor<2x2x64xf32>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  %a = tsr.silu %n4 : (tensor<2x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %a : tensor<2x8x4x4xf32, #tsr.layout<nhwc>>
}

// The causal pad fuses into the kernel producing its input; the convolution
// stays a library op, and its consumers start a new kernel.
// CHECK-LABEL: func.func @causal_pad_conv(
// CHECK-NEXT: %[[P:[^ ]+]] = tsr.fused
// CHECK: tsr.silu
// CHECK: tsr.pad
// CHECK: tsr.yield
// CHECK: %[[C:[^ ]+]] = tsr.conv %[[P]],
// CHECK-NEXT: %[[O:[^ ]+]] = tsr.fused (%[[C]]{{.*}}) :
// CHECK: tsr.relu
// CHECK: func.return %[[O]]
func.func @causal_pad_conv(%x: tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>, %w: tensor<4x4x3x3x3xf32>) -> tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>> {
  %s = tsr.silu %x : (tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>) -> tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %s, %z {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>} : (tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x4x5x7x7xf32, #tsr.layout<ndhwc>>
  %c = tsr.conv %p, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x4x5x7x7xf32, #tsr.layout<ndhwc>>, tensor<4x4x3x3x3xf32>) -> tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>
  %r = tsr.relu %c : (tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>) -> tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>
  func.return %r : tensor<1x4x3x5x5xf32, #tsr.layout<ndhwc>>
}

// A value with consumers in two kernels is materialized by its own kernel;
// a transpose whose result is its input's memory stays a host view.
// CHECK-LABEL: func.func @shared(
// CHECK-NEXT: %[[E:[^ ]+]] = tsr.fused
// CHECK: tsr.exp
// CHECK: %[[T:[^ ]+]] = tsr.permute
// CHECK-NEXT: %[[MM:[^ ]+]] = tsr.matmul %[[E]], %[[T]]
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.fused (%[[E]]) :
// CHECK: tsr.sum
// CHECK: %[[O:[^ ]+]] = tsr.fused (%[[MM]], %[[E]]) :
// CHECK: tsr.mul
// CHECK: func.return %[[O]], %[[S]]
func.func @shared(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %e = tsr.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = tsr.permute %w {dims = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32, #tsr.layout<[1, 0]>>
  %m = tsr.matmul %e, %t : (tensor<4x8xf32>, tensor<8x8xf32, #tsr.layout<[1, 0]>>) -> tensor<4x8xf32>
  %s = tsr.sum %e {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %o = tsr.mul %m, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %o, %s : tensor<4x8xf32>, tensor<4x1xf32>
}

// At dynamic sizes too: a transposed GEMM operand whose dims keep their memory order
// (`?x16` rows read as `16x?` in layout [1, 0]) is a host view, not a copy kernel; a
// transpose that moves memory is a kernel.
// CHECK-LABEL: func.func @dynamic_transpose_view(
// CHECK-SAME: %[[R:[^:]+]]: tensor<?x16xf32>
// CHECK-NEXT: %[[T:[^ ]+]] = tsr.permute %[[R]] {dims = array<i64: 1, 0>} : (tensor<?x16xf32>) -> tensor<16x?xf32, #tsr.layout<[1, 0]>>
// CHECK-NEXT: %[[C:[^ ]+]] = tsr.fused (%[[R]]) : (tensor<?x16xf32>) -> tensor<16x?xf32> {
// CHECK: tsr.permute
// CHECK: tsr.matmul %[[T]], %{{[^ ]+}}
// CHECK: tsr.matmul %[[C]], %{{[^ ]+}}
func.func @dynamic_transpose_view(%rows: tensor<?x16xf32>, %x: tensor<?x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %t = tsr.permute %rows {dims = array<i64: 1, 0>} : (tensor<?x16xf32>) -> tensor<16x?xf32, #tsr.layout<[1, 0]>>
  %c = tsr.permute %rows {dims = array<i64: 1, 0>} : (tensor<?x16xf32>) -> tensor<16x?xf32>
  %m = tsr.matmul %t, %x : (tensor<16x?xf32, #tsr.layout<[1, 0]>>, tensor<?x8xf32>) -> tensor<16x8xf32>
  %n = tsr.matmul %c, %x : (tensor<16x?xf32>, tensor<?x8xf32>) -> tensor<16x8xf32>
  func.return %m, %n : tensor<16x8xf32>, tensor<16x8xf32>
}

// A chain of views that starts at a view the host also reads (a Linear's weight
// transposed for a GEMM, transposed back and reshaped for a 1x1 conv) stays views.
// CHECK-LABEL: func.func @view_chain_from_a_view(
// CHECK-NEXT: %[[T:[^ ]+]] = tsr.permute %{{[^ ]+}}
// CHECK-NEXT: %[[B:[^ ]+]] = tsr.permute %[[T]]
// CHECK-NEXT: %[[K:[^ ]+]] = tsr.reshape %[[B]]
// CHECK-NEXT: tsr.matmul %{{[^ ]+}}, %[[T]]
// CHECK-NEXT: tsr.conv %{{[^ ]+}}, %[[K]]
// CHECK-NOT: tsr.fused
func.func @view_chain_from_a_view(%w: tensor<10x12xf32>, %x: tensor<4x12xf32>, %y: tensor<1x12x1x4xf32, #tsr.layout<nhwc>>) -> (tensor<4x10xf32>, tensor<1x10x1x4xf32, #tsr.layout<nhwc>>) {
  %t = tsr.permute %w {dims = array<i64: 1, 0>} : (tensor<10x12xf32>) -> tensor<12x10xf32, #tsr.layout<[1, 0]>>
  %b = tsr.permute %t {dims = array<i64: 1, 0>} : (tensor<12x10xf32, #tsr.layout<[1, 0]>>) -> tensor<10x12xf32>
  %k = tsr.reshape %b : (tensor<10x12xf32>) -> tensor<10x12x1x1xf32, #tsr.layout<nchw>>
  %m = tsr.matmul %x, %t : (tensor<4x12xf32>, tensor<12x10xf32, #tsr.layout<[1, 0]>>) -> tensor<4x10xf32>
  %c = tsr.conv %y, %k {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x12x1x4xf32, #tsr.layout<nhwc>>, tensor<10x12x1x1xf32, #tsr.layout<nchw>>) -> tensor<1x10x1x4xf32, #tsr.layout<nhwc>>
  func.return %m, %c : tensor<4x10xf32>, tensor<1x10x1x4xf32, #tsr.layout<nhwc>>
}

// A kernel whose output would be a view (a permute) of what it computes writes the
// computed value; the permute stays a host view. Its inputs then share its dims, so
// the NCHW one is read through transpose tiles (a 1x1 conv's backward at dynamic sizes
// reads BatchNorm's input gradient as reshape(permute(dx)), the reshape on the host).
// CHECK-LABEL: func.func @kernel_output_viewed_by_a_permute(
// CHECK-NEXT: %[[D:[^ ]+]] = tsr.fused (%{{[^ ]+}}, %{{[^ ]+}}) : (tensor<?x96x?x?xf32, #tsr.layout<nhwc>>, tensor<?x96x?x?xf32, #tsr.layout<nchw>>) -> tensor<?x96x?x?xf32, #tsr.layout<nhwc>> {
// CHECK: tsr.yield %{{[^ ]+}} : tensor<?x96x?x?xf32, #tsr.layout<nhwc>>
// CHECK: %[[P:[^ ]+]] = tsr.permute %[[D]] {dims = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: tsr.reshape %[[P]], %{{[^ ]+}}
func.func @kernel_output_viewed_by_a_permute(%a: tensor<?x96x?x?xf32, #tsr.layout<nchw>>, %b: tensor<?x96x?x?xf32, #tsr.layout<nhwc>>, %rows: i64, %w: tensor<96x16xf32>) -> tensor<?x16xf32> {
  %s = tsr.sub %b, %a : (tensor<?x96x?x?xf32, #tsr.layout<nhwc>>, tensor<?x96x?x?xf32, #tsr.layout<nchw>>) -> tensor<?x96x?x?xf32, #tsr.layout<nhwc>>
  %p = tsr.permute %s {dims = array<i64: 0, 2, 3, 1>} : (tensor<?x96x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x?x?x96xf32, #tsr.layout<nchw>>
  %r = tsr.reshape %p, %rows : (tensor<?x?x?x96xf32, #tsr.layout<nchw>>, i64) -> tensor<?x96xf32>
  %m = tsr.matmul %r, %w : (tensor<?x96xf32>, tensor<96x16xf32>) -> tensor<?x16xf32>
  func.return %m : tensor<?x16xf32>
}

// Nothing to fuse: the function is left as it is.
// CHECK-LABEL: func.func @library_only(
// CHECK-NEXT: tsr.matmul
// CHECK-NEXT: func.return
func.func @library_only(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %m = tsr.matmul %a, %b : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  func.return %m : tensor<4x2xf32>
}

// A training forward returns the pre-activation its backward reads, and the ReLU reads it:
// one kernel writes both (the returned value is a further output of the ReLU's group).
// CHECK-LABEL: func.func @saved_preactivation(
// CHECK-NEXT: %[[N:[^ ,]+]], %[[Y:[^ ,]+]] = tsr.fused ({{.*}}) : {{.*}} -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
// CHECK: %[[N1:[^ ]+]] = tsr.mul
// CHECK: %[[Y1:[^ ]+]] = tsr.maximum %[[N1]]
// CHECK-NEXT: tsr.yield %[[N1]], %[[Y1]] : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[N]], %[[Y]]
func.func @saved_preactivation(%x: tensor<2x4x3x3xf32>, %m: tensor<1x4x1x1xf32>, %r: tensor<1x4x1x1xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
  %s = tsr.sub %x, %m : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  %n = tsr.mul %s, %r : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  %zero = tsr.constant 0.000000e+00 : f32
  %y = tsr.maximum %n, %zero : (tensor<2x4x3x3xf32>, f32) -> tensor<2x4x3x3xf32>
  func.return %n, %y : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
}
