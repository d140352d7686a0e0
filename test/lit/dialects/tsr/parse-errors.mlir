// Text that does not parse gives file:line:col diagnostics, exit status 1 and no Python traceback.
// RUN: not compilerctl opt %s -p cse --split-input-file 2>&1 | filecheck %s
// RUN: not compilerctl opt %s -p cse 2>&1 | filecheck %s --check-prefix=FIRST

// With --split-input-file every case is reported (CHECK); without it, parsing
// stops at the first error (FIRST).

// CHECK-NOT: Traceback
// CHECK: {{.*}}parse-errors.mlir:[[# @LINE + 2]]:63: error: unknown layout 'nwhc', expected one of ['ncdhw', 'nchw', 'ncl', 'ndhwc', 'nhwc', 'nlc'] or a dim order such as [0, 2, 3, 1]
// FIRST: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:63: error: unknown layout 'nwhc'
func.func @unknown_layout(%x: tensor<1x2x3x4xf32, #tsr.layout<nwhc>>) {
  func.return
}

// -----

// CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:64: error: dim order [0, 1, 1] is not a permutation of 0..2
func.func @not_a_permutation(%x: tensor<2x3x4xf32, #tsr.layout<[0, 1, 1]>>) {
  func.return
}

// -----

// CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:55: error: '[' expected
func.func @empty_layout(%x: tensor<4xf32, #tsr.layout<>>) {
  func.return
}

// -----

// CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: 'tsr.lay' is not registered
func.func @unknown_attr(%x: tensor<4xf32, #tsr.lay<[0]>>) {
  func.return
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error: Operation tsr.frobnicate is not registered
  %0 = tsr.frobnicate %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cmp_predicate(%x: tensor<4xf32>) -> tensor<4xi1> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:16: error: unknown predicate 'gte', expected one of ('eq', 'ne', 'lt', 'le', 'gt', 'ge')
  %0 = tsr.cmp gte, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @constant_string() -> i64 {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:21: error: expected a typed scalar or a dense<...> tensor constant
  %0 = tsr.constant "one"
  func.return %0 : i64
}

// -----

// A type constraint checked while parsing points at the op, not at the next line.
func.func @scalar_result(%x: tensor<4xf32>) -> f32 {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:3: error: f32 should be of base attribute tensor
  %0 = tsr.exp %x : (tensor<4xf32>) -> f32
  func.return %0 : f32
}

// -----

func.func @property_type(%x: tensor<4xf32>, %v: f32) -> tensor<6xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:3: error: Expected attribute i64 but got i32
  %0 = tsr.pad %x, %v {low = array<i32: 1>, high = array<i64: 1>} : (tensor<4xf32>, f32) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}

// -----

func.func @operand_index(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:69: error: Expected integer literal
  %0 = tsr.aten_call "aten.clone.default"(%x) {args = [#tsr.operand<-1>]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @torch_enum(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:67: error: string literal expected
  %0 = tsr.aten_call "aten.clone.default"(%x) {args = [#tsr.torch<channels_last>]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @operand_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:22: error: Expected 1 operand type, but got 2
  %0 = tsr.exp %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @type_mismatch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:15: error: operand is used with type tensor<4xf64>, but has been previously used or defined with type tensor<4xf32>
  func.return %0 : tensor<4xf64>
}

// -----

func.func @missing_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK-NEXT: {{.*}}parse-errors.mlir:[[# @LINE + 1]]:40: error: type expected
  %0 = tsr.exp %x : (tensor<4xf32>) -> i99x
  func.return %0 : tensor<4xf32>
}

// Nothing after the last diagnostic, and only one diagnostic without splitting.
// CHECK-NOT: Traceback
// CHECK-NOT: internal error
// FIRST-NOT: error
// FIRST-NOT: Traceback
