"""``codegen/gpu_reductions.py``: a block of lanes per grid point of a long reduction on GPUs.

The rewrite's shape on hand-written kernel IR (the loops strided by the lanes, one
``gpu.all_reduce`` per accumulator with the loop's own update as combiner, stores on lane 0),
the kernels it leaves alone, and the numerics of whole graphs through the ptx pipeline, run
on this CPU by ``test_ptx.EmulatedPtx`` (each block as 256 OS threads meeting at the barrier)
against the reference interpreter: sums, a NaN through ``amax``, LayerNorm's rows.
"""

from __future__ import annotations

import pytest
import torch
from kernel_testing import graph_inputs, kernel, memref, parse_kernels
from test_ptx import EmulatedPtx

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.gpu_reductions import cooperative_reductions
from tessera.compiler.codegen.kernel_form import kernel_functions, kernel_signatures
from tessera.compiler.codegen.llvm_emitter import emit_module
from tessera.compiler.host_program import build_host_program
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.stages import fuse_kernels, lower_kernels
from tessera.compiler.targets.nvptx.codegen import BLOCK_SIZE
from tessera.compiler.targets.x86.codegen import X86Target


def _sum_kernel(n: int, init: str = "0.0", update: str = "arith.addf %acc, %v fastmath<reassoc> : f32",
                extra: str = "") -> str:
    """Per row of ``x`` (4 rows of ``n``): the sum, stored by the point."""
    return kernel("k", [("x", memref([4, n], "f32")), ("y", memref([4], "f32"))], [1], [4], f"""
    %z = arith.constant {init} : f32
    %n = arith.constant {n} : index
    %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {{
      %v = memref.load %x[%i0, %j] : {memref([4, n], "f32")}
      %u = {update}
      {extra}
      scf.yield %u : f32
    }}
    memref.store %s, %y[%i0] : {memref([4], "f32")}""")


def test_a_long_reduction_gets_a_block_of_lanes_per_point():
    (fn,) = kernel_functions(cooperative_reductions(parse_kernels(_sum_kernel(1000)), BLOCK_SIZE))
    text = str(fn)
    assert kernel_signatures(parse_kernels(str(fn)))[0].threads_per_point == BLOCK_SIZE
    assert "gpu.thread_id" in text and text.count("gpu.all_reduce") == 1
    assert "step %" in text and f"arith.constant {BLOCK_SIZE} : index" in text  # the lanes' stride
    combine = text[text.index("gpu.all_reduce"):]
    assert "arith.addf" in combine and "fastmath<reassoc>" in combine and "gpu.yield" in combine
    assert "scf.if" in text and text.index("scf.if") < text.index("memref.store")  # lane 0 stores


@pytest.mark.parametrize("case, why", [
    (_sum_kernel(64), "64 elements leave most of a block idle"),
    (_sum_kernel(1000, init="1.0"), "an initial value that is not the identity would be counted per lane"),
    (_sum_kernel(1000, update="arith.addf %acc, %v : f32"), "a sum the lowering did not allow to reorder"),
    (_sum_kernel(1000, update="arith.subf %acc, %v : f32"), "subtraction does not associate"),
    (_sum_kernel(1000, extra="%w = arith.mulf %acc, %acc : f32"), "the accumulator read beside its update"),
    (_sum_kernel(1000, extra=f"%r = memref.load %y[%i0] : {memref([4], 'f32')}"), "a stored buffer read back"),
])
def test_kernels_it_cannot_share_are_left_alone(case, why):
    module = parse_kernels(case)
    assert str(cooperative_reductions(module, BLOCK_SIZE)) == str(module), why


def test_a_cpu_target_refuses_a_cooperative_kernel():
    module = cooperative_reductions(parse_kernels(_sum_kernel(1000)), BLOCK_SIZE)
    with pytest.raises(CodegenError, match="one thread per grid point, not 256"):
        emit_module(module, X86Target())


def test_the_signature_carries_its_threads_through_json():
    (sig,) = kernel_signatures(cooperative_reductions(parse_kernels(_sum_kernel(1000)), BLOCK_SIZE))
    assert type(sig).from_json(sig.to_json()) == sig and sig.threads_per_point == BLOCK_SIZE


GRAPHS = {
    # a sum and a mean over 1000 contiguous elements per row
    "sum": ("""
func.func @forward(%x: tensor<3x1000xf32>) -> (tensor<3x1xf32>, tensor<3x1xf32>) {
  %s = tsr.sum %x {dims = array<i64: 1>, keepdim = true} : (tensor<3x1000xf32>) -> tensor<3x1xf32>
  %m = tsr.mean %x {dims = array<i64: 1>, keepdim = true} : (tensor<3x1000xf32>) -> tensor<3x1xf32>
  func.return %s, %m : tensor<3x1xf32>, tensor<3x1xf32>
}""", [(3, 1000)]),
    # amax over a spatial plane of dynamic size, NaN kept (maximumf combines lanes)
    "amax": ("""
func.func @forward(%x: tensor<2x4x?x?xf32>) -> tensor<2x4x1x1xf32> {
  %m = tsr.amax %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x4x?x?xf32>) -> tensor<2x4x1x1xf32>
  func.return %m : tensor<2x4x1x1xf32>
}""", [(2, 4, 20, 30), (2, 4, 3, 5)]),
    # GroupNorm-like statistics and the normalized tensor: two-pass variance, a broadcast
    "norm": ("""
func.func @forward(%x: tensor<2x3x40x40xf32>) -> tensor<2x3x40x40xf32> {
  %m = tsr.mean %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x3x40x40xf32>) -> tensor<2x3x1x1xf32>
  %v = tsr.var %x {dims = array<i64: 2, 3>, keepdim = true, correction = 1.0 : f64} : (tensor<2x3x40x40xf32>) -> tensor<2x3x1x1xf32>
  %d = tsr.sub %x, %m : (tensor<2x3x40x40xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x40x40xf32>
  %r = tsr.mul %d, %v : (tensor<2x3x40x40xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x40x40xf32>
  func.return %r : tensor<2x3x40x40xf32>
}""", [(2, 3, 40, 40)]),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_cooperative_kernels_match_the_interpreter(name):
    text, shapes = GRAPHS[name]
    module = parse_module(text)
    program = lower_kernels(fuse_kernels(module, CompileOptions("ptx")), "ptx")
    assert any(s.threads_per_point == BLOCK_SIZE for s in kernel_signatures(program.kernels)), name
    host = build_host_program(program.host, EmulatedPtx(program.kernels).module())
    for k, shape in enumerate(shapes):
        xs = graph_inputs(module, shape, k)
        if name == "amax":
            xs[0][1, 2, shape[2] - 1, 0] = float("nan")
        for got, want in zip(host(*xs), interpret(module, *xs), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True, msg=f"{name} at {shape}")
        if name == "amax":
            assert torch.isnan(got[1, 2]).all() and not torch.isnan(got[0]).any()
