// The video-VAE block after the x86 graph passes: every conv3d runs
// channels-last (input and result in ndhwc; each weight is read as it comes,
// since the conv packs it once into its own format) and the only relayout
// left is the output's, which keeps eager's ncdhw strides. Before the passes:
// no relayout, every conv3d ncdhw; after assign-layouts alone: 9 relayouts.
// RUN: compilerctl dump %S/../../../examples/video_vae_block.py --target x86 --stage graph-opt | filecheck %s
// RUN: compilerctl dump %S/../../../examples/video_vae_block.py --target x86 --stage graph-opt | filecheck %s --check-prefix=COUNT

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:arg2]]: tensor<1x32x4x16x16xf32, #tsr.layout<ncdhw>>, %[[W1:arg3]]: tensor<32x32x3x3x3xf32, #tsr.layout<ncdhw>>
// CHECK: tsr.pad {{.*}} : (tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %{{[^,]+}}, %[[W1]], {{.*}} : (tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>, tensor<32x32x3x3x3xf32, #tsr.layout<ncdhw>>, {{.*}}) -> tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK: tsr.pad {{.*}} -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %{{[^,]+}}, %arg7, {{.*}} -> tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK: tsr.upsample {{.*}} -> tensor<1x32x4x32x32xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[Y:[^ ]+]] = tsr.conv %{{[^,]+}}, %arg9, {{.*}} -> tensor<1x32x4x32x32xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[OUT:[^ ]+]] = tsr.relayout %[[Y]] : ({{.*}}) -> tensor<1x32x4x32x32xf32, #tsr.layout<ncdhw>>
// CHECK-NEXT: func.return %[[OUT]]

// COUNT-COUNT-1: tsr.relayout
// COUNT-NOT: tsr.relayout
