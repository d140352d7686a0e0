"""``codegen/gpu.py::thread_per_point`` on kernels that take their sizes at run
time: a pointwise kernel's inner ``scf.for`` becomes the innermost grid dim
whether its trip count and the grid are constants or ``memref.dim`` of the
kernel's arguments (the lowering's dynamic kernels, ``test_dynamic_kernels.py``),
reductions keep their loops (shared by a block of lanes, ``gpu_reductions``),
the PTX goes through ptxas, and the folded kernels, run on this CPU through
``test_ptx.EmulatedPtx``, match the reference interpreter at several sizes.
"""

from __future__ import annotations

import pytest
import torch
from kernel_testing import graph_inputs, parse_kernels
from test_dynamic_kernels import NORM, PAD_UPSAMPLE, RELAYOUT
from test_ptx import SMS, EmulatedPtx, _optimized, needs_ptxas

from tessera.compiler.codegen.gpu import thread_per_point
from tessera.compiler.codegen.gpu_reductions import cooperative_reductions
from tessera.compiler.codegen.kernel_form import kernel_functions, kernel_signatures
from tessera.compiler.host_program import build_host_program
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module, print_module
from tessera.compiler.lowering import lower_to_kernels
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.stages import fuse_kernels, lower_kernels
from tessera.compiler.targets import codegen_target
from tessera.compiler.targets.nvptx.codegen import BLOCK_SIZE
from tessera.compiler.targets.nvptx.ptxas import assemble

NHWC = """
func.func @forward(%x: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, %b: tensor<1x8x1x1xf32>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>> {
  %a = tsr.add %x, %b : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, tensor<1x8x1x1xf32>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %a : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  func.return %s : tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
}
"""
"""Channels-last pointwise: the loop over C (8) joins a grid of dynamic (N, H, W)."""

NCHW = """
func.func @forward(%x: tensor<?x4x?x?xf32>, %y: tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32> {
  %m = tsr.mul %x, %y : (tensor<?x4x?x?xf32>, tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %t = tsr.tanh %m : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  func.return %t : tensor<?x4x?x?xf32>
}
"""
"""NCHW pointwise: the loop over W, a dynamic trip count, becomes the grid's last dim."""

# name: (graph, kernel grids before thread_per_point, after, sizes to run)
CASES = {
    "nhwc_pointwise": (NHWC, [((2, 0), (2, 2), (2, 3))], [((2, 0), (2, 2), (2, 3), 8)],
                       [(2, 8, 5, 7), (1, 8, 1, 33), (3, 8, 16, 9)]),
    "nchw_pointwise": (NCHW, [((2, 0), 4, (2, 2))], [((2, 0), 4, (2, 2), (2, 3))],
                       [(2, 4, 5, 7), (1, 4, 3, 100), (2, 4, 9, 1)]),
    "relayout": (RELAYOUT, [((1, 0), (1, 2), (1, 3))], [((1, 0), (1, 2), (1, 3), 16)],
                 [(1, 16, 8, 16), (2, 16, 9, 13), (1, 16, 3, 5)]),
    "pad_upsample": (PAD_UPSAMPLE, [(4, (1, 2))], [(4, (1, 2), (1, 3))],
                     [(1, 4, 3, 5), (1, 4, 8, 8), (1, 4, 2, 13)]),
    # fused_0 reduces over H and W (its loops carry sums): its grid stays (n, c), and a block
    # of lanes shares each point's loops (gpu_reductions)
    "norm": (NORM, [((1, 0), 8), ((3, 0), (3, 2), 8)], [((1, 0), 8), ((3, 0), (3, 2), 8, (3, 3))],
             [(2, 8, 5, 7), (1, 8, 16, 16), (3, 8, 9, 2)]),
}


def _fused(name):
    return fuse_kernels(parse_module(CASES[name][0]), CompileOptions("ptx"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamic_loop_becomes_the_innermost_grid_dim(name):
    _, before, after, _ = CASES[name]
    unfolded = lower_to_kernels(_fused(name)).kernels
    folded = thread_per_point(unfolded)
    assert [s.grid for s in kernel_signatures(unfolded)] == before
    assert [s.grid for s in kernel_signatures(folded)] == after
    # what the ptx target's kernel stage runs (a long reduction: a block of lanes per point)
    assert print_module(lower_kernels(_fused(name), "ptx").kernels) == \
        print_module(cooperative_reductions(folded, BLOCK_SIZE))
    for old, new, g0, g1 in zip(kernel_functions(unfolded), kernel_functions(folded), before, after, strict=True):
        if g0 == g1:
            assert str(old) == str(new), "a kernel that does not fold is left as it was"


@needs_ptxas
@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_dynamic_kernels_assemble_with_ptxas(name):
    kernels = lower_kernels(_fused(name), "ptx").kernels
    for sm in SMS:
        target = codegen_target("ptx", features=sm)
        ptx = target.emit_assembly(_optimized(kernels, target))
        assert ".entry fused_0" in ptx
        assert assemble(ptx, sm)[:4] == b"\x7fELF"


@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_dynamic_kernels_match_the_interpreter(name):
    """One compile, emulated at every size (grids of several 256-thread blocks and
    ragged tails, dynamic extents of 1 included)."""
    text, _, _, shapes = CASES[name]
    module = parse_module(text)
    program = lower_kernels(fuse_kernels(module, CompileOptions("ptx")), "ptx")
    host = build_host_program(program.host, EmulatedPtx(program.kernels).module())
    for k, shape in enumerate(shapes):
        xs = graph_inputs(module, shape, k)
        for got, want in zip(host(*xs), interpret(module, *xs), strict=True):
            assert got.shape == want.shape and got.stride() == want.stride(), (name, shape)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_dynamic_channels_last_kernel_reads_along_c_across_threads():
    """Adjacent threads write adjacent channels at a size given at run time:
    threads 0..k-1 write exactly the first k elements in memory."""
    (kernel,) = kernel_functions(kernels := lower_kernels(_fused("nhwc_pointwise"), "ptx").kernels)
    (sig,) = kernel_signatures(kernels)
    emu = EmulatedPtx(kernels)
    x = torch.randn(2, 8, 3, 5).to(memory_format=torch.channels_last)
    b = torch.randn(1, 8, 1, 1)
    n = x.numel()
    expected = torch.nn.functional.silu(x + b).permute(0, 2, 3, 1).reshape(-1)  # in memory order
    for threads in (8, 20, 256, 300, None):
        guard = torch.full((n + 64,), float("nan"))  # 64 elements of guard past the tensor
        out = guard[:n].view(2, 3, 5, 8).permute(0, 3, 1, 2)
        assert out.stride() == x.stride()
        pointers = [x.data_ptr(), b.data_ptr(), out.data_ptr(), *sig.dims_of([x, b, out])]
        emu.launch_threads(kernel.sym_name.data, pointers, threads, total=sig.grid_size_of([x, b, out]))
        done = n if threads is None else min(threads, n)
        torch.testing.assert_close(guard[:done], expected[:done])
        assert not guard[done:].isfinite().any(), f"{threads} threads wrote past element {done}"


TILES = """
func.func @double(%x: memref<?x?xf32, strided<[?, 1]>>, %y: memref<?x?xf32, strided<[?, 1]>>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %y, %c0 : memref<?x?xf32, strided<[?, 1]>>
  %n7 = arith.addi %n, %c7 : index
  %t = arith.divui %n7, %c8 : index
  "scf.parallel"(%c0, %t, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%ti: index):
    %r0 = arith.muli %ti, %c8 : index
    %m = memref.dim %y, %c1 : memref<?x?xf32, strided<[?, 1]>>
    scf.for %j = %c0 to BOUND step %c1 {
      scf.for %r = %c0 to %c8 step %c1 {
        %i = arith.addi %r0, %r : index
        %in = arith.cmpi ult, %i, %n : index
        scf.if %in {
          %v = memref.load %x[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
          %w = arith.addf %v, %v : f32
          memref.store %w, %y[%i, %j] : memref<?x?xf32, strided<[?, 1]>>
        }
      }
    }
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
"""
"""A grid of 8-row tiles, ``(n + 7) / 8``, whose body computes its loop's bound
(``%m``, the row length) before the loop: it is hoisted ahead of the grid."""


def test_a_bound_the_body_computes_is_hoisted_and_tiled_grids_kept():
    module = parse_kernels(TILES.replace("BOUND", "%m"))
    folded = thread_per_point(module)
    (sig,) = kernel_signatures(folded)
    assert kernel_signatures(module)[0].grid == ((1, 0, 8),) and sig.grid == ((1, 0, 8), (1, 1))
    (fn,) = kernel_functions(folded)
    entry = list(fn.body.block.ops)
    assert [op.name for op in entry].count("memref.dim") == 2 and entry[-2].name == "scf.parallel"
    assert "memref.dim" not in str(entry[-2]), "the bound moved ahead of the grid"
    emu = EmulatedPtx(folded)
    for shape in ((5, 3), (17, 9), (8, 1), (40, 33)):
        x = torch.randn(shape)
        y = torch.full(shape, float("nan"))
        emu.launch_threads("double", [x.data_ptr(), y.data_ptr(), *sig.dims_of([x, y])], total=sig.grid_size_of([x, y]))
        torch.testing.assert_close(y, 2 * x)


@pytest.mark.parametrize("bound, why", [
    ("%ti", "a trip count that depends on the grid index"),
    ("%m1", "a bound that is no grid extent kernel_form reads (dim - 1)"),
])
def test_bounds_that_cannot_be_a_grid_extent_leave_the_kernel_alone(bound, why):
    text = TILES.replace("BOUND", bound).replace(
        "    scf.for %j", "    %m1 = arith.subi %m, %c1 : index\n    scf.for %j")
    module = parse_kernels(text)
    assert print_module(thread_per_point(module)) == print_module(module), why
