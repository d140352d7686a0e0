// The #tsr.layout attribute round trip: names, explicit dim orders, and no encoding.
// RUN: compilerctl opt %s -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse | compilerctl opt - -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | compilerctl opt - -p cse | filecheck %s
// RUN: compilerctl opt %s -p cse --generic | filecheck %s --check-prefix=GENERIC

// Named layouts print by their name.
// CHECK-LABEL: func.func @named(
// CHECK-SAME: %{{[^:]+}}: tensor<2x3x4xf32, #tsr.layout<ncl>>,
// CHECK-SAME: %{{[^:]+}}: tensor<2x3x4xf32, #tsr.layout<nlc>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<nchw>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<nhwc>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5xf32, #tsr.layout<ncdhw>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5xf32, #tsr.layout<ndhwc>>)
// GENERIC-LABEL: "func.func"() <{sym_name = "named", function_type = (
// GENERIC-SAME: tensor<2x3x4xf32, #tsr.layout<ncl>>, tensor<2x3x4xf32, #tsr.layout<nlc>>,
// GENERIC-SAME: tensor<1x2x3x4xf32, #tsr.layout<nchw>>, tensor<1x2x3x4xf32, #tsr.layout<nhwc>>,
// GENERIC-SAME: tensor<1x2x3x4x5xf32, #tsr.layout<ncdhw>>, tensor<1x2x3x4x5xf32, #tsr.layout<ndhwc>>) -> ()
func.func @named(%a: tensor<2x3x4xf32, #tsr.layout<ncl>>, %b: tensor<2x3x4xf32, #tsr.layout<nlc>>,
                 %c: tensor<1x2x3x4xf32, #tsr.layout<nchw>>, %d: tensor<1x2x3x4xf32, #tsr.layout<nhwc>>,
                 %e: tensor<1x2x3x4x5xf32, #tsr.layout<ncdhw>>, %f: tensor<1x2x3x4x5xf32, #tsr.layout<ndhwc>>) {
  func.return
}

// A dim order that equals a named layout of its rank prints as that name.
// CHECK-LABEL: func.func @explicit_named(
// CHECK-SAME: %{{[^:]+}}: tensor<2x3x4xf32, #tsr.layout<ncl>>,
// CHECK-SAME: %{{[^:]+}}: tensor<2x3x4xf32, #tsr.layout<nlc>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<nchw>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<nhwc>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5xf32, #tsr.layout<ncdhw>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5xf32, #tsr.layout<ndhwc>>)
func.func @explicit_named(%a: tensor<2x3x4xf32, #tsr.layout<[0, 1, 2]>>, %b: tensor<2x3x4xf32, #tsr.layout<[0, 2, 1]>>,
                          %c: tensor<1x2x3x4xf32, #tsr.layout<[0, 1, 2, 3]>>, %d: tensor<1x2x3x4xf32, #tsr.layout<[0,2,3,1]>>,
                          %e: tensor<1x2x3x4x5xf32, #tsr.layout<[0, 1, 2, 3, 4]>>, %f: tensor<1x2x3x4x5xf32, #tsr.layout< [ 0, 2, 3, 4, 1 ] >>) {
  func.return
}

// An explicit dim order and its name are the same type: the return type spelled
// [0, 2, 3, 1] matches the nhwc value (func.return's verifier compares them).
// CHECK-LABEL: func.func @same_type(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x2x3x4xf32, #tsr.layout<nhwc>>) -> tensor<1x2x3x4xf32, #tsr.layout<nhwc>> {
// CHECK-NEXT: func.return %[[X]] : tensor<1x2x3x4xf32, #tsr.layout<nhwc>>
func.func @same_type(%x: tensor<1x2x3x4xf32, #tsr.layout<nhwc>>) -> tensor<1x2x3x4xf32, #tsr.layout<[0, 2, 3, 1]>> {
  func.return %x : tensor<1x2x3x4xf32, #tsr.layout<nhwc>>
}

// Other dim orders print as a list, including identities of ranks without a
// name (0, 1 and 2) and the other orders of ranks that have names.
// CHECK-LABEL: func.func @explicit(
// CHECK-SAME: %{{[^:]+}}: tensor<f32, #tsr.layout<[]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<8xf32, #tsr.layout<[0]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<4x8xf32, #tsr.layout<[0, 1]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<4x8xf32, #tsr.layout<[1, 0]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<2x3x4xf32, #tsr.layout<[2, 1, 0]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<[3, 2, 1, 0]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 1, 2]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5xf32, #tsr.layout<[0, 2, 1, 3, 4]>>,
// CHECK-SAME: %{{[^:]+}}: tensor<1x2x3x4x5x6xf32, #tsr.layout<[0, 1, 2, 3, 4, 5]>>)
func.func @explicit(%a: tensor<f32, #tsr.layout<[]>>, %b: tensor<8xf32, #tsr.layout<[0]>>,
                    %c: tensor<4x8xf32, #tsr.layout<[0, 1]>>, %d: tensor<4x8xf32, #tsr.layout<[1, 0]>>,
                    %e: tensor<2x3x4xf32, #tsr.layout<[2, 1, 0]>>, %f: tensor<1x2x3x4xf32, #tsr.layout<[3, 2, 1, 0]>>,
                    %g: tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 1, 2]>>, %h: tensor<1x2x3x4x5xf32, #tsr.layout<[0, 2, 1, 3, 4]>>,
                    %i: tensor<1x2x3x4x5x6xf32, #tsr.layout<[0, 1, 2, 3, 4, 5]>>) {
  func.return
}

// No encoding stays no encoding (an identity layout is not added), and an
// identity layout is not dropped either: the two are different types.
// CHECK-LABEL: func.func @no_encoding(
// CHECK-SAME: %[[P:[^:]+]]: tensor<1x2x3x4xf32>, %[[Q:[^:]+]]: tensor<4x8xi8>) -> (tensor<1x2x3x4xf32, #tsr.layout<nchw>>, tensor<4x8xi8>) {
// CHECK-NEXT: %[[R:[^ ]+]] = tsr.relayout %[[P]] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<nchw>>
// CHECK-NEXT: func.return %[[R]], %[[Q]] : tensor<1x2x3x4xf32, #tsr.layout<nchw>>, tensor<4x8xi8>{{$}}
func.func @no_encoding(%p: tensor<1x2x3x4xf32>, %q: tensor<4x8xi8>) -> (tensor<1x2x3x4xf32, #tsr.layout<nchw>>, tensor<4x8xi8>) {
  %r = tsr.relayout %p : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<nchw>>
  func.return %r, %q : tensor<1x2x3x4xf32, #tsr.layout<nchw>>, tensor<4x8xi8>
}

// Layouts on op results and inside a dense constant's type print the same way.
// CHECK-LABEL: func.func @results(
// CHECK-NEXT: %[[W:[^ ]+]] = tsr.constant dense<0.000000e+00> : tensor<3x2xf32, #tsr.layout<[1, 0]>>
// CHECK-NEXT: %{{[^ ]+}} = tsr.relayout %{{[^ ]+}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<nhwc>>
// CHECK-NEXT: %{{[^ ]+}} = tsr.relayout %{{[^ ]+}} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 2, 1]>>
func.func @results(%x: tensor<1x2x3x4xf32>) -> (tensor<3x2xf32, #tsr.layout<[1, 0]>>, tensor<1x2x3x4xf32, #tsr.layout<nhwc>>, tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 2, 1]>>) {
  %w = tsr.constant dense<0.000000e+00> : tensor<3x2xf32, #tsr.layout<[1, 0]>>
  %a = tsr.relayout %x : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<[0, 2, 3, 1]>>
  %b = tsr.relayout %x : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 2, 1]>>
  func.return %w, %a, %b : tensor<3x2xf32, #tsr.layout<[1, 0]>>, tensor<1x2x3x4xf32, #tsr.layout<nhwc>>, tensor<1x2x3x4xf32, #tsr.layout<[0, 3, 2, 1]>>
}
