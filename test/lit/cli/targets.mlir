// compilerctl targets: a header, one row per target of the registry (by name) and each one's stages.
// RUN: compilerctl targets | filecheck %s

// CHECK: {{^}}target {{ *}}build {{ *}}run {{ *}}toolchain / device
// CHECK-NEXT: {{^}}aarch64 {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.*}}llvmlite{{.*}}; {{.+}}
// CHECK-NEXT: {{^}}metal {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.+}}; {{.*}}MPS device{{.*}}
// CHECK-NEXT: {{^}}ptx {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.+}}; {{.*}}CUDA {{.*}}
// CHECK-NEXT: {{^}}x86 {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.*}}llvmlite{{.*}}; {{.+}}
// CHECK-NEXT: // aarch64 stages: fx, graph, graph-opt, fused, kernel, llvm, asm, obj
// CHECK-NEXT: // metal stages: fx, graph, graph-opt, fused, kernel, msl, metallib{{$}}
// CHECK-NEXT: // ptx stages: fx, graph, graph-opt, fused, kernel, llvm, ptx, cubin
// CHECK-NEXT: // x86 stages: fx, graph, graph-opt, fused, kernel, llvm, asm, obj
