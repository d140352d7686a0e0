// compilerctl targets agrees with what lit found on this host: AVX2 (and AVX512-VNNI) on x86, ptxas for ptx.
// REQUIRES: avx2
// RUN: compilerctl targets | filecheck %s
// RUN: %if avx512vnni %{ compilerctl targets | filecheck %s --check-prefix=VNNI %}
// RUN: %if ptxas %{ compilerctl targets | filecheck %s --check-prefix=PTXAS %}

// CHECK: {{^}}x86 {{ +}}yes {{ +}}yes {{ +}}llvmlite (LLVM X86); host CPU: {{.*}}avx2
// VNNI: {{^}}x86 {{.*}}; host CPU: {{.*}}avx512vnni
// PTXAS: {{^}}ptx {{ +}}{{yes|no}} {{ +}}{{yes|no}} {{ +}}{{.*}} + {{.*}}ptxas;
