// select-conv-impl records on each conv what computes it: tessera's x86 conv kernel
// and its vector path (tsr.impl, from the features, not from the host), or nothing:
// the library. A depthwise 3x3 goes to the kernel; a first conv with 3 input channels
// and a bf16 conv stay on oneDNN; the ptx target has no conv kernel of its own.
// RUN: compilerctl opt %s -p 'select-conv-impl{target=x86 features="+avx512f"}' | filecheck %s --check-prefix=AVX512
// RUN: compilerctl opt %s -p 'select-conv-impl{target=x86 features="+avx2,+fma"}' | filecheck %s --check-prefix=AVX2
// RUN: compilerctl opt %s -p 'select-conv-impl{target=x86 features="+sse4.2"}' | filecheck %s --check-prefix=LIB
// RUN: compilerctl opt %s -p 'select-conv-impl{target=ptx}' | filecheck %s --check-prefix=LIB
// RUN: compilerctl opt %s -p 'select-conv-impl{target=x86 features="+avx2,+fma"},select-conv-impl{target=x86 features="+sse4.2"}' | filecheck %s --check-prefix=LIB

// AVX512-LABEL: func.func @depthwise(
// AVX512: tsr.conv {{.*}}tsr.impl = "avx512"
// AVX512-LABEL: func.func @first_conv(
// AVX512-NOT: tsr.impl
// AVX512-LABEL: func.func @half(
// AVX512-NOT: tsr.impl

// AVX2-LABEL: func.func @depthwise(
// AVX2: tsr.conv {{.*}}tsr.impl = "avx2"

// LIB-NOT: tsr.impl

func.func @depthwise(%x: tensor<1x64x14x14xf32, #tsr.layout<nhwc>>, %w: tensor<64x1x3x3xf32>) -> tensor<1x64x14x14xf32, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 64 : i64} : (tensor<1x64x14x14xf32, #tsr.layout<nhwc>>, tensor<64x1x3x3xf32>) -> tensor<1x64x14x14xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x64x14x14xf32, #tsr.layout<nhwc>>
}

func.func @first_conv(%x: tensor<1x3x32x32xf32, #tsr.layout<nhwc>>, %w: tensor<16x3x3x3xf32>) -> tensor<1x16x32x32xf32, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x32x32xf32, #tsr.layout<nhwc>>, tensor<16x3x3x3xf32>) -> tensor<1x16x32x32xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x16x32x32xf32, #tsr.layout<nhwc>>
}

func.func @half(%x: tensor<1x64x14x14xbf16, #tsr.layout<nhwc>>, %w: tensor<64x1x3x3xbf16>) -> tensor<1x64x14x14xbf16, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 64 : i64} : (tensor<1x64x14x14xbf16, #tsr.layout<nhwc>>, tensor<64x1x3x3xbf16>) -> tensor<1x64x14x14xbf16, #tsr.layout<nhwc>>
  func.return %y : tensor<1x64x14x14xbf16, #tsr.layout<nhwc>>
}
