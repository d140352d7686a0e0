// Every verifier check of the tsr dialect and its layout attribute, one case per split.
// RUN: compilerctl opt %s -p cse --split-input-file --verify-diagnostics

// ---- #tsr.layout ----------------------------------------------------------

// expected-error @+1 {{'func.func' op block argument #0: layout of rank 4 on a rank-2 tensor}}
func.func @layout_rank_on_argument(%x: tensor<4x8xf32, #tsr.layout<nhwc>>) {
  func.return
}

// -----

// expected-error @+1 {{'func.func' op block argument #1: layout of rank 2 on a rank-3 tensor}}
func.func @layout_rank_on_second_argument(%x: tensor<4x8xf32>, %y: tensor<2x4x8xf32, #tsr.layout<[1, 0]>>) {
  func.return
}

// -----

// expected-error @+1 {{unknown layout 'nwhc', expected one of ['ncdhw', 'nchw', 'ncl', 'ndhwc', 'nhwc', 'nlc'] or a dim order such as [0, 2, 3, 1]}}
func.func @unknown_layout_name(%x: tensor<1x2x3x4xf32, #tsr.layout<nwhc>>) {
  func.return
}

// -----

// expected-error @+1 {{dim order [0, 2, 2, 1] is not a permutation of 0..3}}
func.func @repeated_dim(%x: tensor<1x2x3x4xf32, #tsr.layout<[0, 2, 2, 1]>>) {
  func.return
}

// -----

// expected-error @+1 {{dim order [1, 2] is not a permutation of 0..1}}
func.func @dim_out_of_range(%x: tensor<4x8xf32, #tsr.layout<[1, 2]>>) {
  func.return
}

// -----

// expected-error @+1 {{dim order [-1, 0] is not a permutation of 0..1}}
func.func @negative_dim(%x: tensor<4x8xf32, #tsr.layout<[-1, 0]>>) {
  func.return
}

// -----

func.func @layout_rank_on_result(%x: tensor<4x8xf32>) -> tensor<4x8xf32, #tsr.layout<nchw>> {
  // expected-error @+1 {{'tsr.relayout' op relayout #1: layout of rank 4 on a rank-2 tensor}}
  %0 = tsr.relayout %x : (tensor<4x8xf32>) -> tensor<4x8xf32, #tsr.layout<nchw>>
  func.return %0 : tensor<4x8xf32, #tsr.layout<nchw>>
}

// -----

// ---- tsr.constant -----------------------------------------------------------

func.func @constant_type_mismatch() -> f64 {
  // expected-error @+1 {{'tsr.constant' op value of type f32 does not match result type f64}}
  %0 = "tsr.constant"() <{value = 1.000000e+00 : f32}> : () -> f64
  func.return %0 : f64
}

// -----

func.func @constant_unsupported_type() -> i4 {
  // expected-error @+1 {{'tsr.constant' op unsupported constant element type i4}}
  %0 = tsr.constant 1 : i4
  func.return %0 : i4
}

// -----

func.func @constant_layout_rank() -> tensor<4xf32, #tsr.layout<[1, 0]>> {
  // expected-error @+1 {{'tsr.constant' op result: layout of rank 2 on a rank-1 tensor}}
  %0 = tsr.constant dense<1.000000e+00> : tensor<4xf32, #tsr.layout<[1, 0]>>
  func.return %0 : tensor<4xf32, #tsr.layout<[1, 0]>>
}

// -----

func.func @constant_not_a_number() -> i64 {
  // expected-error @+1 {{expected a typed scalar or a dense<...> tensor constant}}
  %0 = tsr.constant "one"
  func.return %0 : i64
}

// -----

// ---- tsr.convert, tsr.relayout ---------------------------------------------

func.func @convert_shape(%x: tensor<2x8xf32>) -> tensor<8x2xbf16> {
  // expected-error @+1 {{'tsr.convert' op result has shape [8, 2], expected [2, 8]}}
  %0 = tsr.convert %x : (tensor<2x8xf32>) -> tensor<8x2xbf16>
  func.return %0 : tensor<8x2xbf16>
}

// -----

func.func @relayout_shape(%x: tensor<1x8xf32>) -> tensor<8x1xf32> {
  // expected-error @+1 {{'tsr.relayout' op result has shape [8, 1], expected [1, 8]}}
  %0 = tsr.relayout %x : (tensor<1x8xf32>) -> tensor<8x1xf32>
  func.return %0 : tensor<8x1xf32>
}

// -----

func.func @relayout_dtype(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xbf16, #tsr.layout<nhwc>> {
  // expected-error @+1 {{'tsr.relayout' op relayout cannot change the element type; use tsr.convert}}
  %0 = tsr.relayout %x : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
  func.return %0 : tensor<1x64x8x8xbf16, #tsr.layout<nhwc>>
}

// -----

func.func @relayout_scalar(%x: f32) -> tensor<f32> {
  // expected-error @+1 {{f32 should be of base attribute tensor}}
  %0 = tsr.relayout %x : (f32) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

// ---- tsr.aten_call ----------------------------------------------------------

func.func @aten_call_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.aten_call' op callee 'torch.relu' is not a torch operator (NAMESPACE.NAME.OVERLOAD)}}
  %0 = tsr.aten_call "torch.relu"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @aten_call_operand_index(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.aten_call' op #tsr.operand<2> out of range}}
  %0 = tsr.aten_call "aten.add.Tensor"(%x, %y) {args = [#tsr.operand<0>, #tsr.operand<2>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @aten_call_operand_index_in_list(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tsr.aten_call' op #tsr.operand<1> out of range}}
  %0 = tsr.aten_call "aten.cat.default"(%x) {args = [[#tsr.operand<0>, #tsr.operand<1>], 0]} : (tensor<4xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @aten_call_operand_index_in_kwargs(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.aten_call' op #tsr.operand<1> out of range}}
  %0 = tsr.aten_call "aten.add.Tensor"(%x) {args = [#tsr.operand<0>], kwargs = {other = #tsr.operand<1>}} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @aten_call_operand_without_operands() -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.aten_call' op #tsr.operand<0> out of range}}
  %0 = tsr.aten_call "aten.clone.default"() {args = [#tsr.operand<0>]} : () -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @aten_call_scalar_result(%x: tensor<4xf32>) -> f32 {
  // expected-error @+1 {{'tsr.aten_call' op result of type f32 is neither a tensor nor none}}
  %0 = tsr.aten_call "aten._local_scalar_dense.default"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> f32
  func.return %0 : f32
}

// -----

func.func @aten_call_result_layout(%x: tensor<4xf32>) -> tensor<4xf32, #tsr.layout<nchw>> {
  // expected-error @+1 {{'tsr.aten_call' op aten_call #1: layout of rank 4 on a rank-1 tensor}}
  %0 = tsr.aten_call "aten.clone.default"(%x) {args = [#tsr.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32, #tsr.layout<nchw>>
  func.return %0 : tensor<4xf32, #tsr.layout<nchw>>
}

// -----

func.func @aten_call_negative_operand(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Expected integer literal}}
  %0 = tsr.aten_call "aten.clone.default"(%x) {args = [#tsr.operand<-1>]} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- unary elementwise ------------------------------------------------------

func.func @unary_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'tsr.exp' op tsr.exp needs a floating-point operand}}
  %0 = tsr.exp %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @unary_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'tsr.sigmoid' op tsr.sigmoid needs a floating-point operand}}
  %0 = tsr.sigmoid %x : (tensor<4xi1>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @unary_shape(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tsr.silu' op result has shape [8], expected [4]}}
  %0 = tsr.silu %x : (tensor<4xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @unary_scalar_result(%x: tensor<4xf32>) -> f32 {
  // expected-error @+1 {{f32 should be of base attribute tensor}}
  %0 = tsr.neg %x : (tensor<4xf32>) -> f32
  func.return %0 : f32
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.gelu' op approximate must be "none" or "tanh"}}
  %0 = tsr.gelu %x {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @gelu_approximate_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.gelu' op 1 : i64 should be of base attribute string}}
  %0 = "tsr.gelu"(%x) <{approximate = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- binary elementwise, tsr.cmp, tsr.where ---------------------------------

func.func @binary_not_broadcastable(%x: tensor<2x8xf32>, %y: tensor<3xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'tsr.add' op shapes [[2, 8], [3]] are not broadcast-compatible}}
  %0 = tsr.add %x, %y : (tensor<2x8xf32>, tensor<3xf32>) -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

func.func @binary_result_shape(%x: tensor<2x1xf32>, %y: tensor<1x8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'tsr.mul' op result has shape [2, 1], expected [2, 8]}}
  %0 = tsr.mul %x, %y : (tensor<2x1xf32>, tensor<1x8xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}

// -----

func.func @binary_no_tensor(%x: f32, %y: f32) -> tensor<f32> {
  // expected-error @+1 {{'tsr.sub' op at least one operand must be a tensor}}
  %0 = tsr.sub %x, %y : (f32, f32) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @binary_unsupported_scalar(%x: tensor<4xf32>, %y: index) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.div' op operand #1 must be a tensor or a scalar of a supported element type, got index}}
  %0 = tsr.div %x, %y : (tensor<4xf32>, index) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Both the argument and the op using it are reported.
// expected-error @+1 {{'func.func' op block argument #0: layout of rank 3 on a rank-2 tensor}}
func.func @binary_operand_layout(%x: tensor<4x8xf32, #tsr.layout<ncl>>, %y: f32) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.pow' op tsr.pow #0: layout of rank 3 on a rank-2 tensor}}
  %0 = tsr.pow %x, %y : (tensor<4x8xf32, #tsr.layout<ncl>>, f32) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @cmp_predicate(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{unknown predicate 'gte', expected one of ('eq', 'ne', 'lt', 'le', 'gt', 'ge')}}
  %0 = tsr.cmp gte, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_predicate_generic(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'tsr.cmp' op unknown predicate 'gte', expected one of ('eq', 'ne', 'lt', 'le', 'gt', 'ge')}}
  %0 = "tsr.cmp"(%x, %x) <{predicate = "gte"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_result_type(%x: tensor<4xf32>, %c: f64) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.cmp' op result element type must be i1, got f32}}
  %0 = tsr.cmp lt, %x, %c : (tensor<4xf32>, f64) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cmp_shape(%x: tensor<4xf32>, %y: tensor<2x1xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'tsr.cmp' op result has shape [4], expected [2, 4]}}
  %0 = tsr.cmp eq, %x, %y : (tensor<4xf32>, tensor<2x1xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_two_results(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{tsr.cmp has one result}}
  %0 = tsr.cmp eq, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>)
  func.return %0 : tensor<4xi1>
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.where' op condition must have element type i1, got f32}}
  %0 = tsr.where %c, %x, %y : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @where_shape(%c: tensor<4xi1>, %x: tensor<3xf32>, %y: f32) -> tensor<4xf32> {
  // expected-error @+1 {{'tsr.where' op shapes [[4], [3], []] are not broadcast-compatible}}
  %0 = tsr.where %c, %x, %y : (tensor<4xi1>, tensor<3xf32>, f32) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- tsr.pad, permute, reshape, expand, slice, concat -----------------------

func.func @pad_value_tensor(%x: tensor<4xf32>, %v: tensor<f32>) -> tensor<6xf32> {
  // expected-error @+1 {{'tsr.pad' op pad value must be a scalar, got tensor<f32>}}
  %0 = tsr.pad %x, %v {low = array<i64: 1>, high = array<i64: 1>} : (tensor<4xf32>, tensor<f32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}

// -----

func.func @pad_amount_count(%x: tensor<4x4xf32>, %v: f32) -> tensor<6x4xf32> {
  // expected-error @+1 {{'tsr.pad' op low/high need 2 entries, got 1/2}}
  %0 = tsr.pad %x, %v {low = array<i64: 1>, high = array<i64: 1, 0>} : (tensor<4x4xf32>, f32) -> tensor<6x4xf32>
  func.return %0 : tensor<6x4xf32>
}

// -----

func.func @pad_crop_below_zero(%x: tensor<4x4xf32>, %v: f32) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tsr.pad' op padding crops below zero: result shape would be [4, -1]}}
  %0 = tsr.pad %x, %v {low = array<i64: 0, -3>, high = array<i64: 0, -2>} : (tensor<4x4xf32>, f32) -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}

// -----

func.func @pad_result_shape(%x: tensor<4x4xf32>, %v: f32) -> tensor<6x6xf32> {
  // expected-error @+1 {{'tsr.pad' op result has shape [6, 6], expected [5, 6]}}
  %0 = tsr.pad %x, %v {low = array<i64: 0, 1>, high = array<i64: 1, 1>} : (tensor<4x4xf32>, f32) -> tensor<6x6xf32>
  func.return %0 : tensor<6x6xf32>
}

// -----

func.func @pad_element_type(%x: tensor<4xf32>, %v: f32) -> tensor<6xf16> {
  // expected-error @+1 {{'tsr.pad' op pad: element types f32 and f16 differ}}
  %0 = tsr.pad %x, %v {low = array<i64: 1>, high = array<i64: 1>} : (tensor<4xf32>, f32) -> tensor<6xf16>
  func.return %0 : tensor<6xf16>
}

// -----

func.func @permute_repeated(%x: tensor<2x3x4xf32>) -> tensor<2x2x4xf32> {
  // expected-error @+1 {{'tsr.permute' op dims [0, 0, 2] are not a permutation of 0..2}}
  %0 = tsr.permute %x {dims = array<i64: 0, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  func.return %0 : tensor<2x2x4xf32>
}

// -----

func.func @permute_too_few(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'tsr.permute' op dims [1, 0] are not a permutation of 0..2}}
  %0 = tsr.permute %x {dims = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @permute_result_shape(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'tsr.permute' op result has shape [2, 3, 4], expected [4, 2, 3]}}
  %0 = tsr.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// -----

func.func @permute_element_type(%x: tensor<2x3xf32>) -> tensor<3x2xi32> {
  // expected-error @+1 {{'tsr.permute' op permute: element types f32 and i32 differ}}
  %0 = tsr.permute %x {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xi32>
  func.return %0 : tensor<3x2xi32>
}

// -----

func.func @reshape_numel(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x30xf32> {
  // expected-error @+1 {{'tsr.reshape' op cannot reshape [1, 4, 4, 8] (128 elements) to [1, 4, 30] (120)}}
  %0 = tsr.reshape %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x30xf32>
  func.return %0 : tensor<1x4x30xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<4x8xf32>) -> tensor<32xbf16> {
  // expected-error @+1 {{'tsr.reshape' op reshape: element types f32 and bf16 differ}}
  %0 = tsr.reshape %x : (tensor<4x8xf32>) -> tensor<32xbf16>
  func.return %0 : tensor<32xbf16>
}

// -----

func.func @expand_non_unit(%x: tensor<2x64xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'tsr.expand' op cannot expand [2, 64] to [4, 64]}}
  %0 = tsr.expand %x : (tensor<2x64xf32>) -> tensor<4x64xf32>
  func.return %0 : tensor<4x64xf32>
}

// -----

func.func @expand_fewer_dims(%x: tensor<1x1x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{'tsr.expand' op cannot expand [1, 1, 64] to [8, 64]}}
  %0 = tsr.expand %x : (tensor<1x1x64xf32>) -> tensor<8x64xf32>
  func.return %0 : tensor<8x64xf32>
}

// -----

func.func @expand_element_type(%x: tensor<1x64xf32>) -> tensor<8x64xf16> {
  // expected-error @+1 {{'tsr.expand' op expand: element types f32 and f16 differ}}
  %0 = tsr.expand %x : (tensor<1x64xf32>) -> tensor<8x64xf16>
  func.return %0 : tensor<8x64xf16>
}

// -----

func.func @slice_end_out_of_range(%x: tensor<1x8x8xf32>) -> tensor<1x8x5xf32> {
  // expected-error @+1 {{'tsr.slice' op need 0 <= start <= end <= 8, got start=4 end=9}}
  %0 = tsr.slice %x {dim = 2 : i64, start = 4 : i64, end = 9 : i64, step = 1 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x5xf32>
  func.return %0 : tensor<1x8x5xf32>
}

// -----

func.func @slice_start_after_end(%x: tensor<1x8x8xf32>) -> tensor<1x8x0xf32> {
  // expected-error @+1 {{'tsr.slice' op need 0 <= start <= end <= 8, got start=5 end=3}}
  %0 = tsr.slice %x {dim = 2 : i64, start = 5 : i64, end = 3 : i64, step = 1 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x0xf32>
  func.return %0 : tensor<1x8x0xf32>
}

// -----

func.func @slice_negative_start(%x: tensor<1x8x8xf32>) -> tensor<1x8x3xf32> {
  // expected-error @+1 {{'tsr.slice' op need 0 <= start <= end <= 8, got start=-1 end=2}}
  %0 = tsr.slice %x {dim = 2 : i64, start = -1 : i64, end = 2 : i64, step = 1 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x3xf32>
  func.return %0 : tensor<1x8x3xf32>
}

// -----

func.func @slice_dim_out_of_range(%x: tensor<1x8x8xf32>) -> tensor<1x8x8xf32> {
  // expected-error @+1 {{'tsr.slice' op slice: dim 3 out of range for rank 3}}
  %0 = tsr.slice %x {dim = 3 : i64, start = 0 : i64, end = 1 : i64, step = 1 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  func.return %0 : tensor<1x8x8xf32>
}

// -----

func.func @slice_step(%x: tensor<1x8x8xf32>) -> tensor<1x8x8xf32> {
  // expected-error @+1 {{'tsr.slice' op step must be positive, got 0}}
  %0 = tsr.slice %x {dim = 2 : i64, start = 0 : i64, end = 8 : i64, step = 0 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  func.return %0 : tensor<1x8x8xf32>
}

// -----

func.func @slice_result_shape(%x: tensor<1x8x8xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{'tsr.slice' op result has shape [1, 8, 4], expected [1, 8, 3]}}
  %0 = tsr.slice %x {dim = -1 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64} : (tensor<1x8x8xf32>) -> tensor<1x8x4xf32>
  func.return %0 : tensor<1x8x4xf32>
}

// -----

func.func @slice_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tsr.slice' op cannot slice a rank-0 tensor}}
  %0 = tsr.slice %x {dim = 0 : i64, start = 0 : i64, end = 1 : i64, step = 1 : i64} : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @concat_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tsr.concat' op cannot concatenate rank-0 tensors}}
  %0 = tsr.concat %x, %x {dim = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @concat_mismatch(%a: tensor<1x32x8x8xf32>, %b: tensor<1x16x4x8xf32>) -> tensor<1x48x8x8xf32> {
  // expected-error @+1 {{'tsr.concat' op operand #1 of shape [1, 16, 4, 8] does not match [1, 32, 8, 8] outside dim 1}}
  %0 = tsr.concat %a, %b {dim = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x16x4x8xf32>) -> tensor<1x48x8x8xf32>
  func.return %0 : tensor<1x48x8x8xf32>
}

// -----

func.func @concat_rank(%a: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'tsr.concat' op operand #1 of shape [8] does not match [2, 8] outside dim 0}}
  %0 = tsr.concat %a, %b {dim = 0 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @concat_element_type(%a: tensor<2x8xf32>, %b: tensor<2x8xbf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.concat' op operand #1: element types bf16 and f32 differ}}
  %0 = tsr.concat %a, %b {dim = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xbf16>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @concat_result_shape(%a: tensor<2x8xf32>, %b: tensor<3x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.concat' op result has shape [4, 8], expected [5, 8]}}
  %0 = tsr.concat %a, %b {dim = 0 : i64} : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @concat_dim(%a: tensor<2x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.concat' op concat: dim -3 out of range for rank 2}}
  %0 = tsr.concat %a, %a {dim = -3 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @concat_no_operands() -> tensor<2x8xf32> {
  // expected-error @+1 {{'tsr.concat' op concat needs at least one operand}}
  %0 = "tsr.concat"() <{dim = 0 : i64}> : () -> tensor<2x8xf32>
  func.return %0 : tensor<2x8xf32>
}

// -----

// ---- tsr.conv ---------------------------------------------------------------

func.func @conv_rank(%x: tensor<16x32xf32>, %w: tensor<8x16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'tsr.conv' op input must have rank 3 or 4 or 5, got 2}}
  %0 = tsr.conv %x, %w {stride = array<i64>, padding = array<i64>, dilation = array<i64>, groups = 1 : i64} : (tensor<16x32xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  func.return %0 : tensor<8x32xf32>
}

// -----

func.func @conv_weight_rank(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3xf32>) -> tensor<1x32x6x6xf32> {
  // expected-error @+1 {{'tsr.conv' op weight rank 3 differs from input rank 4}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3xf32>) -> tensor<1x32x6x6xf32>
  func.return %0 : tensor<1x32x6x6xf32>
}

// -----

func.func @conv_stride_entries(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x6x6xf32> {
  // expected-error @+1 {{'tsr.conv' op stride needs 2 entries, got 3}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x6x6xf32>
  func.return %0 : tensor<1x32x6x6xf32>
}

// -----

func.func @conv_padding_entries(%x: tensor<1x16x8x8x8xf32>, %w: tensor<32x16x3x3x3xf32>) -> tensor<1x32x8x8x8xf32> {
  // expected-error @+1 {{'tsr.conv' op padding needs 3 entries, got 2}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8x8xf32>, tensor<32x16x3x3x3xf32>) -> tensor<1x32x8x8x8xf32>
  func.return %0 : tensor<1x32x8x8x8xf32>
}

// -----

func.func @conv_zero_stride(%x: tensor<1x16x8xf32>, %w: tensor<32x16x3xf32>) -> tensor<1x32x6xf32> {
  // expected-error @+1 {{'tsr.conv' op stride and dilation must be >= 1, padding >= 0}}
  %0 = tsr.conv %x, %w {stride = array<i64: 0>, padding = array<i64: 0>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<1x16x8xf32>, tensor<32x16x3xf32>) -> tensor<1x32x6xf32>
  func.return %0 : tensor<1x32x6xf32>
}

// -----

func.func @conv_negative_padding(%x: tensor<1x16x8xf32>, %w: tensor<32x16x3xf32>) -> tensor<1x32x4xf32> {
  // expected-error @+1 {{'tsr.conv' op stride and dilation must be >= 1, padding >= 0}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1>, padding = array<i64: -1>, dilation = array<i64: 1>, groups = 1 : i64} : (tensor<1x16x8xf32>, tensor<32x16x3xf32>) -> tensor<1x32x4xf32>
  func.return %0 : tensor<1x32x4xf32>
}

// -----

func.func @conv_groups_divide(%x: tensor<1x64x8x8xf32>, %w: tensor<30x16x1x1xf32>) -> tensor<1x30x8x8xf32> {
  // expected-error @+1 {{'tsr.conv' op groups=4 must divide C_in=64 and C_out=30}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x64x8x8xf32>, tensor<30x16x1x1xf32>) -> tensor<1x30x8x8xf32>
  func.return %0 : tensor<1x30x8x8xf32>
}

// -----

func.func @conv_groups_zero(%x: tensor<1x64x8x8xf32>, %w: tensor<32x64x1x1xf32>) -> tensor<1x32x8x8xf32> {
  // expected-error @+1 {{'tsr.conv' op groups=0 must divide C_in=64 and C_out=32}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 0 : i64} : (tensor<1x64x8x8xf32>, tensor<32x64x1x1xf32>) -> tensor<1x32x8x8xf32>
  func.return %0 : tensor<1x32x8x8xf32>
}

// -----

func.func @conv_channels_per_group(%x: tensor<1x64x8x8xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> {
  // expected-error @+1 {{'tsr.conv' op weight has 64 input channels per group, expected 1}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 64 : i64} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32>
  func.return %0 : tensor<1x64x8x8xf32>
}

// -----

func.func @conv_weight_element_type(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xbf16>) -> tensor<1x32x6x6xf32> {
  // expected-error @+1 {{'tsr.conv' op conv: element types f32 and bf16 differ}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xbf16>) -> tensor<1x32x6x6xf32>
  func.return %0 : tensor<1x32x6x6xf32>
}

// -----

func.func @conv_bias_shape(%x: tensor<1x16x8x8xf32>, %w: tensor<32x16x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x32x6x6xf32> {
  // expected-error @+1 {{'tsr.conv' op bias has shape [16], expected [32]}}
  %0 = tsr.conv %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>, tensor<16xf32>) -> tensor<1x32x6x6xf32>
  func.return %0 : tensor<1x32x6x6xf32>
}

// -----

func.func @conv_kernel_too_big(%x: tensor<1x16x2x2xf32>, %w: tensor<32x16x3x3xf32>) -> tensor<1x32x1x1xf32> {
  // expected-error @+1 {{'tsr.conv' op kernel does not fit spatial dim 0: output size 0}}
  %0 = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x16x2x2xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x1x1xf32>
  func.return %0 : tensor<1x32x1x1xf32>
}

// -----

func.func @conv_output_shape(%x: tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, %w: tensor<64x64x3x3x3xf32>, %b: tensor<64xf32>) -> tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>> {
  // expected-error @+1 {{'tsr.conv' op result has shape [1, 64, 4, 32, 32], expected [1, 64, 4, 34, 34]}}
  %0 = tsr.conv %x, %w, %b {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 1, 1>, dilation = array<i64: 1, 1, 1>, groups = 1 : i64} : (tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xf32>, tensor<64xf32>) -> tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>
  func.return %0 : tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>
}

// -----

func.func @conv_strided_output_shape(%x: tensor<1x64x8x8xf32>, %w: tensor<128x64x3x3xf32>) -> tensor<1x128x8x8xf32> {
  // expected-error @+1 {{'tsr.conv' op result has shape [1, 128, 8, 8], expected [1, 128, 4, 4]}}
  %0 = tsr.conv %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<128x64x3x3xf32>) -> tensor<1x128x8x8xf32>
  func.return %0 : tensor<1x128x8x8xf32>
}

// -----

// ---- reductions -------------------------------------------------------------

func.func @sum_result_shape(%x: tensor<1x4x8x8xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'tsr.sum' op result has shape [1, 4], expected [1, 4, 1, 1]}}
  %0 = tsr.sum %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}

// -----

func.func @sum_all_result_shape(%x: tensor<2x8xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'tsr.sum' op result has shape [1], expected []}}
  %0 = tsr.sum %x {dims = array<i64>, keepdim = false} : (tensor<2x8xf32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}

// -----

func.func @mean_result_shape(%x: tensor<2x8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'tsr.mean' op result has shape [2, 1], expected [2]}}
  %0 = tsr.mean %x {dims = array<i64: 1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  func.return %0 : tensor<2x1xf32>
}

// -----

func.func @mean_int(%x: tensor<2x8xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{'tsr.mean' op tsr.mean needs a floating-point operand}}
  %0 = tsr.mean %x {dims = array<i64: 1>, keepdim = false} : (tensor<2x8xi64>) -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// -----

func.func @amax_result_shape(%x: tensor<2x8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tsr.amax' op result has shape [8], expected [2]}}
  %0 = tsr.amax %x {dims = array<i64: -1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @amin_dim_out_of_range(%x: tensor<2x8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tsr.amin' op tsr.amin: dim 2 out of range for rank 2}}
  %0 = tsr.amin %x {dims = array<i64: 2>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @sum_repeated_dims(%x: tensor<2x8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tsr.sum' op tsr.sum: repeated dims [1, -1]}}
  %0 = tsr.sum %x {dims = array<i64: 1, -1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @var_int(%x: tensor<1x4x16xi32>) -> tensor<1x4x1xi32> {
  // expected-error @+1 {{'tsr.var' op tsr.var needs a floating-point operand}}
  %0 = tsr.var %x {dims = array<i64: 2>, keepdim = true, correction = 0.000000e+00 : f64} : (tensor<1x4x16xi32>) -> tensor<1x4x1xi32>
  func.return %0 : tensor<1x4x1xi32>
}

// -----

func.func @var_no_correction(%x: tensor<1x4x16xf32>) -> tensor<1x4x1xf32> {
  // expected-error @+1 {{'tsr.var' op property 'correction' expected}}
  %0 = tsr.var %x {dims = array<i64: 2>, keepdim = true} : (tensor<1x4x16xf32>) -> tensor<1x4x1xf32>
  func.return %0 : tensor<1x4x1xf32>
}

// -----

// ---- matrix products --------------------------------------------------------

func.func @matmul_rank(%a: tensor<2x8x16xf32>, %b: tensor<16x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'tsr.matmul' op lhs must have rank 2, got 3}}
  %0 = tsr.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x8x4xf32>
  func.return %0 : tensor<2x8x4xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<8x16xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsr.matmul' op contraction sizes differ: [8, 16] x [8, 4]}}
  %0 = tsr.matmul %a, %b : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_result_shape(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tsr.matmul' op result has shape [4, 8], expected [8, 4]}}
  %0 = tsr.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}

// -----

func.func @matmul_element_type(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsr.matmul' op tsr.matmul: element types f32 and bf16 differ}}
  %0 = tsr.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xbf16>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @bmm_rank(%a: tensor<8x16xf32>, %b: tensor<2x16x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'tsr.bmm' op lhs must have rank 3, got 2}}
  %0 = tsr.bmm %a, %b : (tensor<8x16xf32>, tensor<2x16x4xf32>) -> tensor<2x8x4xf32>
  func.return %0 : tensor<2x8x4xf32>
}

// -----

func.func @bmm_batch(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'tsr.bmm' op batch or contraction sizes differ: [2, 8, 16] x [3, 16, 4]}}
  %0 = tsr.bmm %a, %b : (tensor<2x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x8x4xf32>
  func.return %0 : tensor<2x8x4xf32>
}

// -----

func.func @bmm_result_shape(%a: tensor<2x8x16xf32>, %b: tensor<2x16x4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'tsr.bmm' op result has shape [2, 8, 16], expected [2, 8, 4]}}
  %0 = tsr.bmm %a, %b : (tensor<2x8x16xf32>, tensor<2x16x4xf32>) -> tensor<2x8x16xf32>
  func.return %0 : tensor<2x8x16xf32>
}

// -----

func.func @addmm_bias(%bias: tensor<8xf32>, %a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsr.addmm' op shapes [[8], [8, 4]] are not broadcast-compatible}}
  %0 = tsr.addmm %bias, %a, %b : (tensor<8xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @addmm_bias_rank(%bias: tensor<2x8x4xf32>, %a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsr.addmm' op bias of shape [2, 8, 4] does not broadcast to [8, 4]}}
  %0 = tsr.addmm %bias, %a, %b : (tensor<2x8x4xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @addmm_contraction(%bias: tensor<4xf32>, %a: tensor<8x16xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tsr.addmm' op contraction sizes differ: [8, 16] x [4, 16]}}
  %0 = tsr.addmm %bias, %a, %b : (tensor<4xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  func.return %0 : tensor<8x16xf32>
}

// -----

func.func @addmm_bias_element_type(%bias: tensor<4xf16>, %a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tsr.addmm' op tsr.addmm: element types f16 and f32 differ}}
  %0 = tsr.addmm %bias, %a, %b : (tensor<4xf16>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}

// -----

func.func @int_mm_lhs_type(%a: tensor<32x64xf32>, %b: tensor<64x16xi8>) -> tensor<32x16xi32> {
  // expected-error @+1 {{'tsr.int_mm' op int_mm takes i8 or ui8 x i8, got f32 x i8}}
  %0 = tsr.int_mm %a, %b : (tensor<32x64xf32>, tensor<64x16xi8>) -> tensor<32x16xi32>
  func.return %0 : tensor<32x16xi32>
}

// -----

func.func @int_mm_rhs_type(%a: tensor<32x64xui8>, %b: tensor<64x16xui8>) -> tensor<32x16xi32> {
  // expected-error @+1 {{'tsr.int_mm' op int_mm takes i8 or ui8 x i8, got ui8 x ui8}}
  %0 = tsr.int_mm %a, %b : (tensor<32x64xui8>, tensor<64x16xui8>) -> tensor<32x16xi32>
  func.return %0 : tensor<32x16xi32>
}

// -----

func.func @int_mm_result_type(%a: tensor<32x64xi8>, %b: tensor<64x16xi8>) -> tensor<32x16xi64> {
  // expected-error @+1 {{'tsr.int_mm' op int_mm gives i32, got i64}}
  %0 = tsr.int_mm %a, %b : (tensor<32x64xi8>, tensor<64x16xi8>) -> tensor<32x16xi64>
  func.return %0 : tensor<32x16xi64>
}

// -----

func.func @int_mm_contraction(%a: tensor<32x64xi8>, %b: tensor<32x16xi8>) -> tensor<32x16xi32> {
  // expected-error @+1 {{'tsr.int_mm' op contraction sizes differ: [32, 64] x [32, 16]}}
  %0 = tsr.int_mm %a, %b : (tensor<32x64xi8>, tensor<32x16xi8>) -> tensor<32x16xi32>
  func.return %0 : tensor<32x16xi32>
}

// -----

func.func @int_mm_result_shape(%a: tensor<32x64xi8>, %b: tensor<64x16xi8>) -> tensor<16x32xi32> {
  // expected-error @+1 {{'tsr.int_mm' op result has shape [16, 32], expected [32, 16]}}
  %0 = tsr.int_mm %a, %b : (tensor<32x64xi8>, tensor<64x16xi8>) -> tensor<16x32xi32>
  func.return %0 : tensor<16x32xi32>
}

// -----

// ---- tsr.upsample -----------------------------------------------------------

func.func @upsample_mode(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op mode must be "nearest" or "bilinear", got "bicubic"}}
  %0 = tsr.upsample %x {mode = "bicubic"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// -----

func.func @upsample_bilinear_3d(%x: tensor<1x8x4x4x4xf32>) -> tensor<1x8x8x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op bilinear upsampling is 2-D (rank-4 input)}}
  %0 = tsr.upsample %x {mode = "bilinear"} : (tensor<1x8x4x4x4xf32>) -> tensor<1x8x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8x8xf32>
}

// -----

func.func @upsample_nearest_align_corners(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op align_corners applies to bilinear mode only}}
  %0 = tsr.upsample %x {mode = "nearest", align_corners = false} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// -----

func.func @upsample_rank(%x: tensor<8x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op input must have rank 3 or 4 or 5, got 2}}
  %0 = tsr.upsample %x {mode = "nearest"} : (tensor<8x4xf32>) -> tensor<8x8xf32>
  func.return %0 : tensor<8x8xf32>
}

// -----

func.func @upsample_channels(%x: tensor<1x8x4x4xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op result [1, 4, 8, 8] must keep batch and channels of [1, 8, 4, 4]}}
  %0 = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x4x4xf32>) -> tensor<1x4x8x8xf32>
  func.return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @upsample_result_rank(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op result [1, 8, 8] must keep batch and channels of [1, 8, 4, 4]}}
  %0 = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8xf32>
  func.return %0 : tensor<1x8x8xf32>
}

// -----

func.func @upsample_scales(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32> {
  // expected-error @+1 {{'tsr.upsample' op scales needs 2 entries}}
  %0 = tsr.upsample %x {mode = "nearest", scales = array<f64: 2.000000e+00, 2.000000e+00, 2.000000e+00>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// -----

func.func @upsample_element_type(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf16> {
  // expected-error @+1 {{'tsr.upsample' op tsr.upsample: element types f32 and f16 differ}}
  %0 = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x4x4xf32>) -> tensor<1x8x8x8xf16>
  func.return %0 : tensor<1x8x8x8xf16>
}

// -----

func.func @scaled_int_mm_scale_shape(%a: tensor<32x64xui8>, %b: tensor<64x16xi8>, %sa: tensor<16xf32>, %sb: tensor<16xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'tsr.scaled_int_mm' op a_scale has shape [16], expected [32]}}
  %0 = tsr.scaled_int_mm %a, %b, %sa, %sb : (tensor<32x64xui8>, tensor<64x16xi8>, tensor<16xf32>, tensor<16xf32>) -> tensor<32x16xf32>
  func.return %0 : tensor<32x16xf32>
}

// -----

func.func @scaled_int_mm_bias_type(%a: tensor<32x64xi8>, %b: tensor<64x16xi8>, %sa: tensor<32xf32>, %sb: tensor<16xf32>, %bias: tensor<16xf16>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'tsr.scaled_int_mm' op scaled_int_mm's bias must be f32, got f16}}
  %0 = tsr.scaled_int_mm %a, %b, %sa, %sb, %bias : (tensor<32x64xi8>, tensor<64x16xi8>, tensor<32xf32>, tensor<16xf32>, tensor<16xf16>) -> tensor<32x16xf32>
  func.return %0 : tensor<32x16xf32>
}

// -----

func.func @upsample_int(%x: tensor<1x8x4x4xi32>) -> tensor<1x8x8x8xi32> {
  // expected-error @+1 {{'tsr.upsample' op upsample needs a floating-point tensor}}
  %0 = tsr.upsample %x {mode = "nearest"} : (tensor<1x8x4x4xi32>) -> tensor<1x8x8x8xi32>
  func.return %0 : tensor<1x8x8x8xi32>
}
