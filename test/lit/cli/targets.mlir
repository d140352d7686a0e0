// compilerctl targets: a header, one row per target (x86, ptx, metal) and the implemented stages.
// RUN: compilerctl targets | filecheck %s

// CHECK: {{^}}target {{ *}}build {{ *}}run {{ *}}toolchain / device
// CHECK-NEXT: {{^}}x86 {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.*}}llvmlite{{.*}}; {{.+}}
// CHECK-NEXT: {{^}}ptx {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.+}}; {{.*}}CUDA device{{.*}}
// CHECK-NEXT: {{^}}metal {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.+}}; {{.*}}MPS device{{.*}}
// CHECK-NEXT: // x86 stages: fx, graph, graph-opt, fused, kernel, llvm, asm, obj
// CHECK-NEXT: // ptx stages: fx, graph, graph-opt, fused, kernel, llvm, ptx, cubin
// CHECK-NEXT: // metal stages: fx, graph, graph-opt, fused, kernel, msl, metallib{{$}}
