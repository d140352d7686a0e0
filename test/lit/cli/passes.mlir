// compilerctl passes: the registered passes with a summary each, and each target's default pipeline.
// RUN: compilerctl passes | filecheck %s
// RUN: compilerctl passes --pipeline x86 | filecheck %s --check-prefix=PIPELINE
// RUN: compilerctl passes --pipeline ptx | filecheck %s --check-prefix=PIPELINE
// RUN: compilerctl passes --pipeline metal | filecheck %s --check-prefix=PIPELINE
// RUN: not compilerctl passes --pipeline x87 2>&1 | filecheck %s --check-prefix=BAD

// One line per pass, sorted by name, with its summary.
// CHECK: {{^}}cancel-relayouts {{ *}}``cancel-relayouts``: folds chains of ``tsr.relayout``
// CHECK-NEXT: {{^}}cast-constants {{ *}}``cast-constants``:
// CHECK-NEXT: {{^}}cse {{ *}}``cse``: common subexpression elimination over pure ops.
// CHECK-NEXT: {{^}}dce {{ *}}``dce``: removes pure ops whose results are unused.

// One line: the pass specs, comma-separated; constants are typed first, cleanup last.
// PIPELINE: {{^}}cast-constants{policy={{[a-z0-9-]+}}},{{.*}}cancel-relayouts,cse,dce{{$}}
// PIPELINE-NOT: {{.}}

// BAD: error: argument --pipeline: invalid choice: 'x87'
