// The cancel-relayouts pass: chains of relayouts fold into one, and relayouts that change nothing vanish.
// RUN: compilerctl opt %s -p cancel-relayouts | filecheck %s
// RUN: compilerctl opt %s -p cancel-relayouts,cancel-relayouts | filecheck %s

// An inverse pair vanishes: the result is the original value.
// CHECK-LABEL: func.func @inverse_pair(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xf32, #tsr.layout<nchw>>)
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.silu %[[X]] :
// CHECK-NEXT: func.return %[[Y]] :
func.func @inverse_pair(%x: tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>> {
  %a = tsr.relayout %x : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b = tsr.relayout %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %y = tsr.silu %b : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  func.return %y : tensor<1x8x4x4xf32, #tsr.layout<nchw>>
}

// A chain of three folds into one relayout from the original value to the
// last layout.
// CHECK-LABEL: func.func @chain_of_three(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x2x4x4xf32, #tsr.layout<[[IN:[^>]+]]>>)
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x8x2x4x4xf32, #tsr.layout<[[IN]]>>) -> tensor<1x8x2x4x4xf32, #tsr.layout<{{\[4, 3, 2, 1, 0\]}}>>
// CHECK-NEXT: func.return %[[R]] : tensor<1x8x2x4x4xf32, #tsr.layout<{{\[4, 3, 2, 1, 0\]}}>>
// CHECK-NOT: tsr.relayout
// CHECK: }
func.func @chain_of_three(%x: tensor<1x8x2x4x4xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x2x4x4xf32, #tsr.layout<[4, 3, 2, 1, 0]>> {
  %a = tsr.relayout %x : (tensor<1x8x2x4x4xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x2x4x4xf32, #tsr.layout<ndhwc>>
  %b = tsr.relayout %a : (tensor<1x8x2x4x4xf32, #tsr.layout<ndhwc>>) -> tensor<1x8x2x4x4xf32, #tsr.layout<[1, 0, 2, 3, 4]>>
  %c = tsr.relayout %b : (tensor<1x8x2x4x4xf32, #tsr.layout<[1, 0, 2, 3, 4]>>) -> tensor<1x8x2x4x4xf32, #tsr.layout<[4, 3, 2, 1, 0]>>
  func.return %c : tensor<1x8x2x4x4xf32, #tsr.layout<[4, 3, 2, 1, 0]>>
}

// A relayout to its own type vanishes.
// CHECK-LABEL: func.func @identity(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>)
// CHECK-NEXT: func.return %[[X]] : tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>
func.func @identity(%x: tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xbf16, #tsr.layout<nhwc>> {
  %a = tsr.relayout %x : (tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xbf16, #tsr.layout<[0, 2, 3, 1]>>
  func.return %a : tensor<1x8x4x4xbf16, #tsr.layout<nhwc>>
}

// Must do nothing: a single relayout.
// CHECK-LABEL: func.func @single(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xf32>)
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: func.return %[[R]] : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
func.func @single(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>> {
  %a = tsr.relayout %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  func.return %a : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
}

// Must not duplicate work: the middle value has another user, so the first
// relayout stays for it; the inverse one is replaced by the original value.
// CHECK-LABEL: func.func @shared_middle(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xf32, #tsr.layout<nchw>>)
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<[[MID:[^>]+]]>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.silu %[[M]] : (tensor<1x8x4x4xf32, #tsr.layout<[[MID]]>>)
// CHECK-NEXT: %[[E:[^ ]+]] = tsr.exp %[[X]] :
// CHECK-NEXT: func.return %[[S]], %[[E]] :
func.func @shared_middle(%x: tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>) {
  %a = tsr.relayout %x : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b = tsr.relayout %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  %e = tsr.exp %b : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nchw>>
  func.return %s, %e : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<nchw>>
}

// With a middle value used elsewhere and a chain that does not come back,
// the middle relayout stays and the outer one is rewired to the original
// value: still two relayouts, one of them no longer waits for the other.
// CHECK-LABEL: func.func @shared_middle_rewired(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x8x4x4xf32>)
// CHECK-NEXT: %[[M:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[S:[^ ]+]] = tsr.silu %[[M]] :
// CHECK-NEXT: %[[O:[^ ]+]] = tsr.relayout %[[X]] : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<[3, 2, 1, 0]>>
// CHECK-NEXT: func.return %[[S]], %[[O]] :
func.func @shared_middle_rewired(%x: tensor<1x8x4x4xf32>) -> (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<[3, 2, 1, 0]>>) {
  %a = tsr.relayout %x : (tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
  %b = tsr.relayout %a : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<[3, 2, 1, 0]>>
  func.return %s, %b : tensor<1x8x4x4xf32, #tsr.layout<nhwc>>, tensor<1x8x4x4xf32, #tsr.layout<[3, 2, 1, 0]>>
}

// Back to the identity dim order, but as a type without an encoding, which
// is not the input's type: the pair folds into one relayout, which stays.
// CHECK-LABEL: func.func @same_order_other_type(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x8xf32, #tsr.layout<[0, 1]>>)
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[X]] : (tensor<4x8xf32, #tsr.layout<[0, 1]>>) -> tensor<4x8xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<4x8xf32>
func.func @same_order_other_type(%x: tensor<4x8xf32, #tsr.layout<[0, 1]>>) -> tensor<4x8xf32> {
  %a = tsr.relayout %x : (tensor<4x8xf32, #tsr.layout<[0, 1]>>) -> tensor<4x8xf32, #tsr.layout<[1, 0]>>
  %b = tsr.relayout %a : (tensor<4x8xf32, #tsr.layout<[1, 0]>>) -> tensor<4x8xf32>
  func.return %b : tensor<4x8xf32>
}

// A size read from a relayout reads the relayout's input: the relayout, used for
// nothing else, goes.
// CHECK-LABEL: func.func @dim_of_a_relayout(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x8x3x5xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %[[D:[^ ]+]] = tsr.dim %[[X]] {dim = 2 : i64}
// CHECK-NEXT: func.return %[[D]]
func.func @dim_of_a_relayout(%x: tensor<2x8x3x5xf32, #tsr.layout<nhwc>>) -> i64 {
  %r = tsr.relayout %x : (tensor<2x8x3x5xf32, #tsr.layout<nhwc>>) -> tensor<2x8x3x5xf32, #tsr.layout<nchw>>
  %d = tsr.dim %r {dim = 2 : i64} : (tensor<2x8x3x5xf32, #tsr.layout<nchw>>) -> i64
  func.return %d : i64
}
