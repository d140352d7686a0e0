// compilerctl passes: the registered passes with a summary each, and each target's default pipeline.
// RUN: compilerctl passes | filecheck %s
// RUN: compilerctl passes --pipeline x86 | filecheck %s --check-prefix=PIPELINE
// RUN: compilerctl passes --pipeline ptx | filecheck %s --check-prefix=PIPELINE
// RUN: compilerctl passes --pipeline metal | filecheck %s --check-prefix=PIPELINE
// RUN: not compilerctl passes --pipeline x87 2>&1 | filecheck %s --check-prefix=BAD

// One line per pass, sorted by name, with its summary.
// CHECK: {{^}}assign-layouts {{ *}}``assign-layouts{target=x86}``: picks each convolution's layout
// CHECK-NEXT: {{^}}cancel-relayouts {{ *}}``cancel-relayouts``: folds chains of ``tsr.relayout``
// CHECK-NEXT: {{^}}cast-constants {{ *}}``cast-constants``:
// CHECK-NEXT: {{^}}cse {{ *}}``cse``: common subexpression elimination over pure ops.
// CHECK-NEXT: {{^}}dce {{ *}}``dce``: removes pure ops whose results are unused.
// CHECK-NEXT: {{^}}fold-affine-into-conv {{ *}}``fold-affine-into-conv``: a per-output-channel scale or shift
// CHECK-NEXT: {{^}}fold-relayouts-into-convs {{ *}}``fold-relayouts-into-convs``: a conv that tessera's kernel computes reads
// CHECK-NEXT: {{^}}fold-upsample-into-conv {{ *}}``fold-upsample-into-conv``: a convolution of a nearest-upsampled tensor
// CHECK-NEXT: {{^}}free-result-layouts {{ *}}``free-result-layouts``: returns each result marked ``{tsr.free_layout}``
// CHECK-NEXT: {{^}}fuse-conv-epilogues {{ *}}``fuse-conv-epilogues``: an activation after a convolution becomes the
// CHECK-NEXT: {{^}}fuse-conv-residuals {{ *}}``fuse-conv-residuals``: a residual added to a convolution's result
// CHECK-NEXT: {{^}}fuse-int-mm-epilogues {{ *}}``fuse-int-mm-epilogues``: a quantized linear layer's int32 -> float epilogue
// CHECK-NEXT: {{^}}fuse-kernels {{ *}}``fuse-kernels``:
// CHECK-NEXT: {{^}}fuse-relayouts {{ *}}``fuse-relayouts``: a relayout that meets a kernel disappears into it.
// CHECK-NEXT: {{^}}hoist-relayouts {{ *}}``hoist-relayouts``: moves each ``tsr.relayout``

// One line: the pass specs, comma-separated; constants are typed first, then
// half-precision convs and GEMMs widened to f32 where the target says so (x86 without AMX), then
// conv taps that read only zero padding dropped, then per-channel affines fold into convs (without freezing only where the weight is no larger than
// the output), upsample+conv pairs become polyphase convs, layouts are assigned, relayouts hoisted
// (results the caller takes in any layout returned where they cost least, before and after),
// cancelled and fused; cleanup last.
// PIPELINE: {{^}}cast-constants{policy={{[a-z0-9-]+}}},{{(widen-half\{dtypes="[a-z0-9,]+"( gemms=false)?\},)?}}trim-padded-taps,fold-affine-into-conv{per_call=true},fold-upsample-into-conv{target={{[a-z0-9]+}}},assign-layouts{target={{[a-z0-9]+}}},free-result-layouts,hoist-relayouts,cse,cancel-relayouts,free-result-layouts,hoist-relayouts,cse,cancel-relayouts,free-result-layouts,fuse-relayouts,split-group-stats,sink-expands,cse,dce{{$}}
// PIPELINE-NOT: {{.}}

// BAD: error: argument --pipeline: invalid choice: 'x87'
