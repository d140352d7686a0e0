// select-impl records on each conv and int8 GEMM what computes it: tessera's x86
// kernel and its vector path (tsr.impl, from the features, not from the host), or
// nothing: the library. A depthwise 3x3 goes to the conv kernel, and so does a first
// conv with 3 input channels (its taps are loops: microkernel._rolled_taps); a bf16 conv
// stays on oneDNN; an int8 GEMM takes the fastest
// path the features have (none without AVX2); convs=false leaves every conv to the
// library; the ptx target has no kernels of its own. A weight-bound conv (1x1
// 1024->256 at 2x2: 256x more weight than output) goes to the kernel only when its
// weight is packed once (freezing=true): packed on every call, it loses to the
// library's call on the plain weight. Under freezing a 3x3 stride-1 conv runs by
// Winograd, F(4x4) from 49 output tiles (56x56: 196) and F(2x2) from 16 (14x14);
// not at 7x7 (4 tiles) on AVX-512, where the direct kernel wins, but by F(4x4) on
// AVX2 alone, where it does not; without freezing (its weight transformed every
// call) only from 36 output tiles over the batch and 64 channels: F(4x4) at 56x56,
// not at 14x14 or 7x7. Of dynamic sizes the choice is made per size
// ("avx2:winograd"): under freezing from 16 input channels, without from 64
// each way, where a weight too large to pack per call (256x256x3x3) no longer
// sends the conv to the library (the sizes Winograd leaves run on it); 32 -> 32
// without freezing runs on the direct kernel, as every 3x3 of at most 32 channels.
// A 3-D conv of kt x 3 x 3 taps, stride 1, runs by Winograd over each frame's plane
// (its time taps the GEMM's), counting the tiles of every output frame: F(4x4) for
// r3d_18's 64 -> 64 at 8x56x56, under freezing only; not at stride 2 in time, nor of
// dynamic sizes.
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx512f"}' | filecheck %s --check-prefix=AVX512
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx2,+fma"}' | filecheck %s --check-prefix=AVX2
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+sse4.2"}' | filecheck %s --check-prefix=LIB
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx512f,+avx512vnni" convs=false}' | filecheck %s --check-prefix=NOCONV
// RUN: compilerctl opt %s -p 'select-impl{target=ptx}' | filecheck %s --check-prefix=LIB
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx512f" freezing=true}' | filecheck %s --check-prefix=FROZEN
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx2,+fma" freezing=true}' | filecheck %s --check-prefix=FROZEN2
// RUN: compilerctl opt %s -p 'select-impl{target=x86 features="+avx2,+fma"},select-impl{target=x86 features="+sse4.2"}' | filecheck %s --check-prefix=LIB

// AVX512-LABEL: func.func @depthwise(
// AVX512: tsr.conv {{.*}}tsr.impl = "avx512"
// AVX512-LABEL: func.func @first_conv(
// AVX512: tsr.conv {{.*}}tsr.impl = "avx512"
// AVX512-LABEL: func.func @half(
// AVX512-NOT: tsr.impl

// AVX512-LABEL: func.func @weight_bound(
// AVX512-NOT: tsr.impl
// FROZEN-LABEL: func.func @weight_bound(
// FROZEN: tsr.conv {{.*}}tsr.impl = "avx512"
// AVX512-LABEL: func.func @int8(
// AVX512: tsr.int_mm {{.*}}tsr.impl = "avx2"
// AVX512: tsr.scaled_int_mm {{.*}}tsr.impl = "avx2"

// AVX2-LABEL: func.func @depthwise(
// AVX2: tsr.conv {{.*}}tsr.impl = "avx2"
// AVX2-LABEL: func.func @int8(
// AVX2: tsr.int_mm {{.*}}tsr.impl = "avx2"

// NOCONV-NOT: tsr.conv {{.*}}tsr.impl
// NOCONV: tsr.int_mm {{.*}}tsr.impl = "avx512vnni"
// NOCONV: tsr.scaled_int_mm {{.*}}tsr.impl = "avx512vnni"

// FROZEN-LABEL: func.func @winograd(
// FROZEN: tsr.conv {{.*}}tsr.impl = "avx512:winograd4"
// FROZEN: tsr.conv {{.*}}tsr.impl = "avx512:winograd2"
// FROZEN-NOT: winograd
// FROZEN: func.return
// FROZEN2-LABEL: func.func @winograd(
// FROZEN2: tsr.conv {{.*}}tsr.impl = "avx2:winograd4"
// FROZEN2: tsr.conv {{.*}}tsr.impl = "avx2:winograd2"
// FROZEN2: tsr.conv {{.*}}tsr.impl = "avx2:winograd4"
// FROZEN2: func.return
// AVX512-LABEL: func.func @winograd(
// AVX512: tsr.conv {{.*}}tsr.impl = "avx512:winograd4"
// AVX512-NOT: winograd
// AVX512: func.return
// AVX2-LABEL: func.func @winograd_dynamic(
// AVX2: %ya = tsr.conv %a, %wa {tsr.impl = "avx2",
// AVX2: %yb = tsr.conv %b, %wb {tsr.impl = "avx2:winograd",
// A 3x3x3 stride-1 conv by Winograd on each frame (8 frames of 196 tiles), its weight
// transformed once (freezing) or per call; of dynamic sizes, m per size (conv/sized.py).
// FROZEN-LABEL: func.func @winograd_3d(
// FROZEN: %ya = tsr.conv {{.*}}tsr.impl = "avx512:winograd4"
// FROZEN: %yb = tsr.conv {{.*}}tsr.impl = "avx512",
// FROZEN: %yc = tsr.conv {{.*}}tsr.impl = "avx512:winograd",
// AVX512-LABEL: func.func @winograd_3d(
// AVX512: %ya = tsr.conv {{.*}}tsr.impl = "avx512:winograd4"
// AVX512: %yb = tsr.conv {{.*}}tsr.impl = "avx512",
// AVX512: %yc = tsr.conv {{.*}}tsr.impl = "avx512:winograd",
// FROZEN2-LABEL: func.func @winograd_dynamic(
// FROZEN2: tsr.conv {{.*}}tsr.impl = "avx2:winograd"
// FROZEN2: tsr.conv {{.*}}tsr.impl = "avx2:winograd"
// A 3x3x3 conv of 32 channels at 3x8x8 output points, a polyphase 2x2 and a temporal
// 3x1x1 window go to the kernel (session 34); 96 channels at 3x26x26 (147 4x4 tiles)
// by Winograd, its weight transformed per call (session 52).
// AVX512-LABEL: func.func @small_windows(
// AVX512: %ya = tsr.conv {{.*}}tsr.impl = "avx512",
// AVX512: %yb = tsr.conv {{.*}}tsr.impl = "avx512",
// AVX512: %yc = tsr.conv {{.*}}tsr.impl = "avx512",
// AVX512: %yd = tsr.conv {{.*}}tsr.impl = "avx512:winograd4"
// AVX512: func.return

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

func.func @weight_bound(%x: tensor<1x1024x2x2xf32, #tsr.layout<nhwc>>, %w: tensor<256x1024x1x1xf32>) -> tensor<1x256x2x2xf32, #tsr.layout<nhwc>> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1024x2x2xf32, #tsr.layout<nhwc>>, tensor<256x1024x1x1xf32>) -> tensor<1x256x2x2xf32, #tsr.layout<nhwc>>
  func.return %y : tensor<1x256x2x2xf32, #tsr.layout<nhwc>>
}

func.func @int8(%a: tensor<32x64xui8>, %b: tensor<64x16xi8>, %sa: tensor<32xf32>, %sb: tensor<16xf32>) -> (tensor<32x16xi32>, tensor<32x16xf32>) {
  %c = tsr.int_mm %a, %b : (tensor<32x64xui8>, tensor<64x16xi8>) -> tensor<32x16xi32>
  %y = tsr.scaled_int_mm %a, %b, %sa, %sb : (tensor<32x64xui8>, tensor<64x16xi8>, tensor<32xf32>, tensor<16xf32>) -> tensor<32x16xf32>
  func.return %c, %y : tensor<32x16xi32>, tensor<32x16xf32>
}

func.func @winograd(%a: tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, %wa: tensor<64x64x3x3xf32>, %b: tensor<1x256x14x14xf32, #tsr.layout<nhwc>>, %wb: tensor<256x256x3x3xf32>, %c: tensor<1x256x7x7xf32, #tsr.layout<nhwc>>) -> (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, tensor<1x256x14x14xf32, #tsr.layout<nhwc>>, tensor<1x256x7x7xf32, #tsr.layout<nhwc>>) {
  %ya = tsr.conv %a, %wa {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
  %yb = tsr.conv %b, %wb {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x256x14x14xf32, #tsr.layout<nhwc>>, tensor<256x256x3x3xf32>) -> tensor<1x256x14x14xf32, #tsr.layout<nhwc>>
  %yc = tsr.conv %c, %wb {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x256x7x7xf32, #tsr.layout<nhwc>>, tensor<256x256x3x3xf32>) -> tensor<1x256x7x7xf32, #tsr.layout<nhwc>>
  func.return %ya, %yb, %yc : tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, tensor<1x256x14x14xf32, #tsr.layout<nhwc>>, tensor<1x256x7x7xf32, #tsr.layout<nhwc>>
}

func.func @winograd_3d(%a: tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>, %wa: tensor<64x64x3x3x3xf32>, %b: tensor<?x64x?x?x?xf32, #tsr.layout<ndhwc>>) -> (tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x56x56xf32, #tsr.layout<ndhwc>>, tensor<?x64x?x?x?xf32, #tsr.layout<ndhwc>>) {
  %ya = tsr.conv %a, %wa {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xf32>) -> tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>
  %yb = tsr.conv %a, %wa {stride = array<i64: 2, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xf32>) -> tensor<1x64x4x56x56xf32, #tsr.layout<ndhwc>>
  %yc = tsr.conv %b, %wa {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<?x64x?x?x?xf32, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xf32>) -> tensor<?x64x?x?x?xf32, #tsr.layout<ndhwc>>
  func.return %ya, %yb, %yc : tensor<1x64x8x56x56xf32, #tsr.layout<ndhwc>>, tensor<1x64x4x56x56xf32, #tsr.layout<ndhwc>>, tensor<?x64x?x?x?xf32, #tsr.layout<ndhwc>>
}

func.func @winograd_dynamic(%a: tensor<?x32x?x?xf32, #tsr.layout<nhwc>>, %wa: tensor<32x32x3x3xf32>, %b: tensor<?x256x?x?xf32, #tsr.layout<nhwc>>, %wb: tensor<256x256x3x3xf32>) -> (tensor<?x32x?x?xf32, #tsr.layout<nhwc>>, tensor<?x256x?x?xf32, #tsr.layout<nhwc>>) {
  %ya = tsr.conv %a, %wa {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x32x?x?xf32, #tsr.layout<nhwc>>, tensor<32x32x3x3xf32>) -> tensor<?x32x?x?xf32, #tsr.layout<nhwc>>
  %yb = tsr.conv %b, %wb {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<?x256x?x?xf32, #tsr.layout<nhwc>>, tensor<256x256x3x3xf32>) -> tensor<?x256x?x?xf32, #tsr.layout<nhwc>>
  func.return %ya, %yb : tensor<?x32x?x?xf32, #tsr.layout<nhwc>>, tensor<?x256x?x?xf32, #tsr.layout<nhwc>>
}

func.func @small_windows(%a: tensor<1x32x3x10x10xf32, #tsr.layout<ndhwc>>, %wa: tensor<32x32x3x3x3xf32>, %b: tensor<1x32x10x10xf32, #tsr.layout<nhwc>>, %wb: tensor<64x32x2x2xf32>, %c: tensor<1x32x3x8x8xf32, #tsr.layout<ndhwc>>, %wc: tensor<64x32x3x1x1xf32>, %d: tensor<1x96x5x28x28xf32, #tsr.layout<ndhwc>>, %wd: tensor<96x96x3x3x3xf32>) -> (tensor<1x32x1x8x8xf32, #tsr.layout<ndhwc>>, tensor<1x64x9x9xf32, #tsr.layout<nhwc>>, tensor<1x64x1x8x8xf32, #tsr.layout<ndhwc>>, tensor<1x96x3x26x26xf32, #tsr.layout<ndhwc>>) {
  %ya = tsr.conv %a, %wa {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x32x3x10x10xf32, #tsr.layout<ndhwc>>, tensor<32x32x3x3x3xf32>) -> tensor<1x32x1x8x8xf32, #tsr.layout<ndhwc>>
  %yb = tsr.conv %b, %wb {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x32x10x10xf32, #tsr.layout<nhwc>>, tensor<64x32x2x2xf32>) -> tensor<1x64x9x9xf32, #tsr.layout<nhwc>>
  %yc = tsr.conv %c, %wc {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x32x3x8x8xf32, #tsr.layout<ndhwc>>, tensor<64x32x3x1x1xf32>) -> tensor<1x64x1x8x8xf32, #tsr.layout<ndhwc>>
  %yd = tsr.conv %d, %wd {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x96x5x28x28xf32, #tsr.layout<ndhwc>>, tensor<96x96x3x3x3xf32>) -> tensor<1x96x3x26x26xf32, #tsr.layout<ndhwc>>
  func.return %ya, %yb, %yc, %yd : tensor<1x32x1x8x8xf32, #tsr.layout<ndhwc>>, tensor<1x64x9x9xf32, #tsr.layout<nhwc>>, tensor<1x64x1x8x8xf32, #tsr.layout<ndhwc>>, tensor<1x96x3x26x26xf32, #tsr.layout<ndhwc>>
}
