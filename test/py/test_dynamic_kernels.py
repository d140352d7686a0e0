"""Kernels that take their sizes at run time: graphs with dynamic dims (``?``)
are fused, lowered (``memref<?x...>``, ``memref.dim`` grids) and compiled once
for x86 and PTX, then run at several sizes against the reference interpreter
on the same IR (the PTX kernels on this CPU through ``test_ptx.EmulatedPtx``).
"""

from __future__ import annotations

import math

import pytest
import torch

from tessera.compiler.backend import build_kernels, host_program_of, load_kernels
from tessera.compiler.codegen.kernel_form import kernel_signatures
from tessera.compiler.host_program import build_host_program
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module, print_module
from tessera.compiler.placements import in_layout
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.stages import fuse_kernels, lower_kernels
from tessera.runtime.errors import SignatureMismatch
from tessera.runtime.signature import BufferSpec, KernelSignature, grid_extent

from test_ptx import EmulatedPtx

CPU = torch.device("cpu")

NORM = """
func.func @forward(%x: tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, %g: tensor<1x8x1x1xf32>)
    -> (tensor<?x8x?x?xf32>, tensor<?x8x1x1xf32>) {
  %m = tsr.mean %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x1x1xf32>
  %v = tsr.var %x {dims = array<i64: 2, 3>, keepdim = true, correction = 1.0 : f64} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x1x1xf32>
  %d = tsr.sub %x, %m : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, tensor<?x8x1x1xf32>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %y = tsr.mul %d, %g : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>, tensor<1x8x1x1xf32>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %y : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32, #tsr.layout<nhwc>>
  %r = tsr.relayout %s {layout = #tsr.layout<nchw>} : (tensor<?x8x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x8x?x?xf32>
  func.return %r, %v : tensor<?x8x?x?xf32>, tensor<?x8x1x1xf32>
}
"""
"""Channel statistics over dynamic spatial dims (two-pass variance with a run-time
count), broadcasting, and a relayout of dynamic strides."""

PAD_UPSAMPLE = """
func.func @forward(%x: tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32> {
  %z = tsr.constant 0.0 : f32
  %e = tsr.exp %x : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  %p = tsr.pad %e, %z {low = array<i64: 0, 0, 1, 2>, high = array<i64: 0, 0, 1, 0>} : (tensor<1x4x?x?xf32>, f32) -> tensor<1x4x?x?xf32>
  %u = tsr.upsample %p {mode = "nearest", scales = array<f64: 2.0, 2.0>} : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  %t = tsr.tanh %u : (tensor<1x4x?x?xf32>) -> tensor<1x4x?x?xf32>
  func.return %t : tensor<1x4x?x?xf32>
}
"""
"""A pad and a nearest upsample of dynamic dims: results sized ``(n + 3) * 2`` from the input."""

RELAYOUT = """
func.func @forward(%x: tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>> {
  %r = tsr.relayout %x {layout = #tsr.layout<nhwc>} : (tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.silu %r : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  func.return %s : tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
}
"""
"""An NCHW input written NHWC: on x86 through transpose tiles over a grid of
``ceil(W / 8)`` tiles (widths 8 divides, and widths it does not: the edge tiles)."""

INTERLEAVE = """
func.func @forward(%c: tensor<1x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<1x4x?x?xf32, #tsr.layout<nhwc>> {
  %y = tsr.polyphase_interleave %c {scales = array<i64: 2, 2>, shifts = array<i64: 0, 1, 0, 1>} : (tensor<1x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<1x4x?x?xf32, #tsr.layout<nhwc>>
  %t = tsr.tanh %y : (tensor<1x4x?x?xf32, #tsr.layout<nhwc>>) -> tensor<1x4x?x?xf32, #tsr.layout<nhwc>>
  func.return %t : tensor<1x4x?x?xf32, #tsr.layout<nhwc>>
}
"""
"""The phases of a polyphase conv (a 2x upsample folded into a 3x3 conv) interleaved:
each phase holds ``n - 1`` of its input's ``n`` rows, the result ``2 * (n - 1)``."""

LANES = """
func.func @forward(%dy: tensor<?x16x?x?xf32, #tsr.layout<nhwc>>, %x: tensor<?x16x?x?xf32>) -> tensor<16xf32> {
  %p = tsr.mul %dy, %x : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>, tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  %s = tsr.sum %p {dims = array<i64: 0, 2, 3>, keepdim = false} : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<16xf32>
  func.return %s : tensor<16xf32>
}
"""
"""BatchNorm's backward sum over a channels-last tensor, 16 channels a vector, of a
product with an NCHW tensor: its lanes are read ``H * W`` apart, a stride known at run time."""

VIEWED = """
func.func @forward(%dy: tensor<?x16x?x?xf32, #tsr.layout<nhwc>>, %x: tensor<?x16x?x?xf32>) -> tensor<?x?x?x16xf32> {
  %d = tsr.sub %dy, %x : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>, tensor<?x16x?x?xf32>) -> tensor<?x16x?x?xf32, #tsr.layout<nhwc>>
  %p = tsr.permute %d {dims = array<i64: 0, 2, 3, 1>} : (tensor<?x16x?x?xf32, #tsr.layout<nhwc>>) -> tensor<?x?x?x16xf32>
  func.return %p : tensor<?x?x?x16xf32>
}
"""
"""A kernel's result returned through a permute that views it (``fuse-kernels``' rule 5):
the kernel writes the difference in its own dims, the NCHW input read through tiles."""

ROWS = """
func.func @forward(%x: tensor<?x24x?x?xf32>, %y: tensor<?x24x?x?xf32>, %b: tensor<1x24x1x1xf32>) -> tensor<?x24x?x?xf32> {
  %p = tsr.mul %x, %y : (tensor<?x24x?x?xf32>, tensor<?x24x?x?xf32>) -> tensor<?x24x?x?xf32>
  %s = tsr.add %p, %b : (tensor<?x24x?x?xf32>, tensor<1x24x1x1xf32>) -> tensor<?x24x?x?xf32>
  %r = tsr.sigmoid %s : (tensor<?x24x?x?xf32>) -> tensor<?x24x?x?xf32>
  func.return %r : tensor<?x24x?x?xf32>
}
"""
"""NCHW planes of run-time sizes: on x86 each plane is one row, ``h * w`` long
(``lowering/row_dims.py``), the per-channel operand broadcast over it."""

CASES = {"norm": (NORM, [(2, 8, 5, 7), (1, 8, 16, 16), (3, 8, 9, 2)]),
         "rows": (ROWS, [(2, 24, 4, 4), (1, 24, 7, 9), (3, 24, 1, 5), (1, 24, 2, 1)]),
         "viewed": (VIEWED, [(2, 16, 5, 11), (1, 16, 8, 16), (3, 16, 9, 2)]),
         "lanes": (LANES, [(2, 16, 5, 7), (1, 16, 16, 16), (3, 16, 9, 2)]),
         "pad_upsample": (PAD_UPSAMPLE, [(1, 4, 3, 5), (1, 4, 8, 8), (1, 4, 2, 13)]),
         "relayout": (RELAYOUT, [(1, 16, 8, 16), (2, 16, 9, 13), (1, 16, 3, 5)]),
         "interleave": (INTERLEAVE, [(1, 16, 5, 5), (1, 16, 9, 17), (1, 16, 2, 3)])}


def _inputs(fn_args, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for t in fn_args:
        dims = [n if n >= 0 else shape[d] for d, n in enumerate(t.get_shape())]
        out.append(in_layout(torch.randn(dims, generator=gen), t))
    return out


def _entry_types(module):
    fn = next(iter(module.body.block.ops))
    return list(fn.function_type.inputs.data)


@pytest.mark.parametrize("name", sorted(CASES))
def test_x86_kernels_take_their_sizes_at_run_time(name):
    """One compile; every size runs the same kernels and matches the interpreter."""
    text, shapes = CASES[name]
    module = parse_module(text)
    options = CompileOptions("x86")
    host, artifact = build_kernels(module, options)
    assert "memref.dim" in lower_kernels(fuse_kernels(module, options), "x86").text()
    program = host_program_of(host, load_kernels(artifact, CPU), options, CPU)
    assert all(s.dynamic for s in artifact.signatures)
    for k, shape in enumerate(shapes):
        xs = _inputs(_entry_types(module), shape, k)
        want = interpret(module, *xs)
        got = program(*xs)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.stride() == w.stride(), (name, shape)
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_ptx_kernels_take_their_sizes_as_parameters(name):
    """The PTX of the same kernels (sizes as ``i64`` parameters, a grid of their
    product), emulated on this CPU, at every size."""
    text, shapes = CASES[name]
    module = parse_module(text)
    program = lower_kernels(fuse_kernels(module, CompileOptions("ptx")), "ptx")
    emulated = EmulatedPtx(program.kernels)
    assert any(emulated.num_dims.values())
    host = build_host_program(program.host, emulated.module())
    for k, shape in enumerate(shapes):
        xs = _inputs(_entry_types(module), shape, k)
        for g, w in zip(host(*xs), interpret(module, *xs)):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_dynamic_relayout_goes_through_transpose_tiles():
    """The tiled kernel's grid counts tiles of the dynamic dims: its ``h, w``,
    alike in both layouts, are one dim of ``(H * W + 7) / 8`` tiles (``tile_dims``),
    which its signature names ``(arg, 2, 8, 3)`` and keeps through JSON."""
    module = parse_module(RELAYOUT)
    kernels = lower_kernels(fuse_kernels(module, CompileOptions("x86")), "x86").kernels
    (sig,) = kernel_signatures(kernels)
    assert "vector.shuffle" in print_module(kernels)
    assert (1, 2, 8, 3) in sig.grid, sig.grid
    assert KernelSignature.from_json(sig.to_json()) == sig
    x = torch.empty(1, 16, 9, 13)
    assert sig.grid_size_of([x, x]) == math.prod(grid_extent(g, [x, x]) for g in sig.grid) == 2 * 15


def test_a_kernel_viewed_by_a_permute_reads_its_other_layout_through_tiles():
    """Rule 5 of ``fuse-kernels``: the permute stays a host view of the kernel's output,
    whose dims the kernel's inputs share, so the NCHW one goes through transpose tiles
    (it was read a float at a time: 2.3 against 0.45 ms for BatchNorm's input gradient
    at 8x96x32x32 in MobileNetV2's dynamic training step)."""
    module = parse_module(VIEWED)
    fused = fuse_kernels(module, CompileOptions("x86"))
    assert [op.name for op in next(iter(fused.body.block.ops)).body.block.ops] == [
        "tsr.fused", "tsr.permute", "func.return"]
    assert "vector.shuffle" in print_module(lower_kernels(fused, "x86").kernels)


def test_a_dynamic_kernel_checks_what_it_knows():
    """Static sizes of a dynamic kernel's arguments are still checked at launch."""
    module = parse_module(CASES["pad_upsample"][0])
    options = CompileOptions("x86")
    _, artifact = build_kernels(module, options)
    kernels = load_kernels(artifact, CPU)
    name = next(iter(kernels))
    sig = kernels.kernel(name).signature
    args = [torch.empty([n if n >= 0 else 4 for n in a.shape]) for a in sig.args]
    kernels.kernel(name)(*args)
    args[0] = torch.empty(1, 5, 4, 4)  # 5 channels where the kernel has 4
    with pytest.raises(SignatureMismatch, match=r"shape \(1, 5, 4, 4\) != expected \(1, 4, \?, \?\)"):
        kernels.kernel(name)(*args)


def test_a_kernel_of_merged_rows_checks_that_strides_merge():
    """The x86 kernel reads NCHW planes as rows through ``memref.collapse_shape``;
    its signature names the merged dims, and a tensor whose plane is not one run
    (a slice of a wider one) is refused at launch, not read wrong."""
    module = parse_module(ROWS)
    _, artifact = build_kernels(module, CompileOptions("x86"))
    assert "memref.collapse_shape" in lower_kernels(fuse_kernels(module, CompileOptions("x86")), "x86").text()
    kernels = load_kernels(artifact, CPU)
    (name,) = list(kernels)
    k = kernels.kernel(name)
    assert [a.rows for a in k.signature.args] == [((2, 3),), ((2, 3),), (), ((2, 3),)]
    assert KernelSignature.from_json(k.signature.to_json()) == k.signature
    x, y, b, out = torch.randn(2, 24, 3, 8), torch.randn(2, 24, 3, 8), torch.randn(1, 24, 1, 1), torch.empty(2, 24, 3, 8)
    k(x, y, b, out)
    torch.testing.assert_close(out, torch.sigmoid(x * y + b))
    wide = torch.randn(2, 24, 3, 9)[..., :8]
    with pytest.raises(SignatureMismatch, match="do not merge dims"):
        k(wide, y, b, out)


@pytest.mark.parametrize("shape, strides, merges", [
    ((2, 8, 4, 4), (128, 16, 4, 1), True),
    ((2, 8, 1, 4), (32, 4, 999, 1), True),      # a dim of size 1 may have any stride
    ((2, 8, 4, 1), (32, 4, 1, 7), True),        # the innermost too: its stride is the kernel's own (1)
    ((2, 8, 4, 4), (160, 20, 5, 1), False),     # rows 5 apart: a slice of wider planes
    ((2, 8, 0, 4), (4, 4, 4, 1), True),         # an empty tensor addresses nothing
])
def test_merged_rows_accept_the_strides_that_merge(shape, strides, merges):
    spec = BufferSpec((-1, 8, -1, -1), (-1, -1, -1, 1), "float32", rows=((2, 3),))
    assert spec.merges(shape, strides) is merges


def test_dynamic_grids_split_across_threads_give_identical_results():
    """A chunk of a dynamic grid starts mid-row and steps its outer indices row by
    row (``codegen/cpu.py``): every split writes what one chunk writes."""
    module = parse_module(RELAYOUT)
    _, artifact = build_kernels(module, CompileOptions("x86"))
    kernels = load_kernels(artifact, CPU)
    (name,) = list(kernels)
    k = kernels.kernel(name)
    x = torch.randn(3, 16, 9, 13, generator=torch.Generator().manual_seed(0))
    y1 = torch.empty_like(x, memory_format=torch.channels_last)
    k.launch(x, y1, chunks=1)
    torch.testing.assert_close(y1, torch.nn.functional.silu(x), rtol=1e-6, atol=1e-6)
    for chunks in (2, 3, 5, 7, 1000):
        y = torch.full_like(y1, float("nan"))
        k.launch(x, y, chunks=chunks)
        assert torch.equal(y, y1), f"{chunks} chunks"
