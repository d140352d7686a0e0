// After the whole x86 graph pipeline, the generic form of a real model's
// graph still parses and verifies in upstream MLIR.
// REQUIRES: torch-mlir
// RUN: compilerctl dump %S/../../../examples/video_vae_block.py --target x86 --stage graph-opt | compilerctl opt - -p cse --generic | torch-mlir-opt --allow-unregistered-dialect | filecheck %s
// RUN: compilerctl opt %S/../passes/hoist-relayouts.mlir --target x86 --generic | torch-mlir-opt --allow-unregistered-dialect | filecheck %s --check-prefix=LIT

// CHECK-LABEL: func.func @forward(
// CHECK: "tsr.pad"{{.*}} -> tensor<1x32x6x18x18xf32, #tsr.layout<ndhwc>>
// CHECK: "tsr.conv"{{.*}} -> tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>
// CHECK: return
// LIT-LABEL: func.func @causal_pad_chain(
// LIT: "tsr.conv"
