// The video-VAE block after the x86 graph passes: every conv3d runs
// channels-last (input and result in ndhwc; each weight is read as it comes,
// since the conv packs it once into its own format); the upsample + conv_up
// pair is a polyphase conv of the small tensor (fold-upsample-into-conv),
// whose interleave writes eager's ncdhw output itself: no relayout is left.
// Before the passes: no relayout, every conv3d ncdhw; after assign-layouts
// alone: 9 relayouts.
// RUN: compilerctl dump %S/../../../examples/video_vae_block.py --target x86 --stage graph-opt | filecheck %s
// RUN: compilerctl dump %S/../../../examples/video_vae_block.py --target x86 --stage graph-opt | filecheck %s --check-prefix=COUNT

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[X:arg2]]: tensor<1x32x4x16x16xf32, #tsr.layout<ncdhw>>, %[[W1:arg3]]: tensor<32x32x3x3x3xf32, #tsr.layout<ncdhw>>
// CHECK: tsr.pad {{.*}} : (tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>, f32) -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %{{[^,]+}}, %[[W1]], {{.*}} : (tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>, tensor<32x32x3x3x3xf32, #tsr.layout<ncdhw>>, {{.*}}) -> tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK: tsr.pad {{.*}} -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: tsr.conv %{{[^,]+}}, %arg7, {{.*}} -> tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK: %[[XP:[^ ]+]] = tsr.pad {{.*}} -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[WP:[^ ]+]] = tsr.polyphase_weight %arg9 {scales = array<i64: 1, 2, 2>, padding = array<i64: 1, 1, 1>} : (tensor<32x32x3x3x3xf32, #tsr.layout<ncdhw>>) -> tensor<128x32x3x2x2xf32, #tsr.layout<ncdhw>>
// CHECK: %[[Y:[^ ]+]] = tsr.conv %[[XP]], %[[WP]], {{.*}} -> tensor<1x128x4x17x17xf32, #tsr.layout<ndhwc>>
// CHECK-NEXT: %[[OUT:[^ ]+]] = tsr.polyphase_interleave %[[Y]] {{.*}} : (tensor<1x128x4x17x17xf32, #tsr.layout<ndhwc>>) -> tensor<1x32x4x32x32xf32, #tsr.layout<ncdhw>>
// CHECK-NEXT: func.return %[[OUT]]

// COUNT-NOT: tsr.relayout
// COUNT-NOT: tsr.upsample
