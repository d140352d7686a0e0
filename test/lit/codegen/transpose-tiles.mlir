// A relayout read by a pointwise kernel goes through an 8x8 transpose tile on
// x86 (lowering/transpose_tiles.py): 8 vector reads along the input's
// contiguous dim, 3 rounds of 8 interleaving shuffles, 8 stores to a scratch
// tile whose rows (along the output's contiguous dim) the f32 body reads and
// computes as vectors, each row written with one vector.transfer_write. GPU targets
// keep one thread per element and read directly. (The freezing pipeline: BatchNorm
// folded into the convs, so the kernels below are the block's whole pointwise work.)
// RUN: compilerctl dump %S/../../../examples/resnet_block.py --freezing --target x86 --stage kernel | filecheck %s
// RUN: compilerctl dump %S/../../../examples/resnet_block.py --freezing --target ptx --stage kernel | filecheck %s --check-prefix=PTX
// RUN: compilerctl dump %S/../../../examples/resnet_block.py --freezing --target x86 --stage asm --features +avx512f | filecheck %s --check-prefix=ASM

// The first conv reads the NCHW input itself (8 input channels: fold-relayouts-into-convs).
// The residual add + ReLU written back NCHW reads the NHWC conv result along c:
// CHECK-LABEL: func.func @fused_3(%in0: memref<1x8x8x8xf32, strided<[512, 1, 64, 8]>>, %in1: memref<1x8x8x8xf32>, %out0: memref<1x8x8x8xf32>)
// CHECK: %[[TILE:.*]] = memref.alloca() : memref<8x8xf32>
// CHECK-COUNT-8: vector.transfer_read %in0[{{.*}}], %{{.*}} {in_bounds = [true], permutation_map = affine_map<(d0, d1, d2, d3) -> (d1)>} : memref<1x8x8x8xf32, strided<[512, 1, 64, 8]>>, vector<8xf32>
// CHECK-COUNT-24: vector.shuffle {{.*}} : vector<8xf32>, vector<8xf32>
// CHECK-COUNT-8: vector.store {{.*}}, %[[TILE]][{{.*}}] : memref<8x8xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[TILE]][{{.*}}], {{.*}} : memref<8x8xf32>, vector<8xf32>
// CHECK: vector.transfer_read %in1[{{.*}}], {{.*}} : memref<1x8x8x8xf32>, vector<8xf32>
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.transfer_write {{.*}}, %out0[{{.*}}] {in_bounds = [true]} : vector<8xf32>, memref<1x8x8x8xf32>

// PTX-NOT: vector.
// PTX-NOT: memref.alloca

// ASM-LABEL: fused_3:
// ASM-NOT: gather
// ASM: vpermt2ps
