"""Kernels that take their sizes at run time: graphs with dynamic dims (``?``)
are fused, lowered (``memref<?x...>``, ``memref.dim`` grids) and compiled once
for x86 and PTX, then run at several sizes against the reference interpreter
on the same IR (the PTX kernels on this CPU through ``test_ptx.EmulatedPtx``).
"""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.backend import build_kernels, host_program_of, load_kernels
from tessera.compiler.host_program import build_host_program
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module
from tessera.compiler.placements import in_layout
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.stages import fuse_kernels, lower_kernels
from tessera.runtime.errors import SignatureMismatch

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

CASES = {"norm": (NORM, [(2, 8, 5, 7), (1, 8, 16, 16), (3, 8, 9, 2)]),
         "pad_upsample": (PAD_UPSAMPLE, [(1, 4, 3, 5), (1, 4, 8, 8), (1, 4, 2, 13)])}


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
