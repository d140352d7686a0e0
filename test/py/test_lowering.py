"""Lowering of fused groups to kernel IR: every kernel keeps the rules of
docs/kernel-ir.md, and running it (the reference evaluator of kernel_eval.py,
which addresses memory through the memref strides) gives what the reference
interpreter gives for the graph. Small shapes: the evaluator is Python."""

from __future__ import annotations

import functools
import io
import re

import pytest
import torch
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr, VectorType
from xdsl.printer import Printer

from tessera.compiler.capture import capture
from tessera.compiler.context import make_context
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import verify_module
from tessera.compiler.lowering import LoweringError, lower_fused, lower_to_kernels, memref_type
from tessera.compiler.stages import run_stages
from tessera.dialects import tsr
from tessera.dialects.tsr.layout import strides_for
from tessera.passes.fuse_kernels import FuseKernels

from conftest import load_example_module, placeholder_inputs
from kernel_eval import check_contract, run_kernel, run_program
from pass_testing import TOLERANCES, parse, random_inputs, tensor_type as T


def fuse(module):
    after = module.clone()
    FuseKernels().apply(make_context(), after)
    verify_module(after)
    return after


def kernels_of(program) -> list:
    return list(program.kernels.body.block.ops)


def text_of(op) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def compare(got: list[torch.Tensor], expected: list[torch.Tensor], rtol: float | None = None) -> None:
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert (g.dtype, g.shape) == (e.dtype, e.shape), f"output #{i}: {g.dtype}{list(g.shape)} vs {e.dtype}{list(e.shape)}"
        big = [d for d in range(e.dim()) if e.shape[d] > 1]
        assert [g.stride(d) for d in big] == [e.stride(d) for d in big], f"output #{i}: strides {g.stride()} vs {e.stride()}"
        if not e.dtype.is_floating_point:
            assert torch.equal(g, e), f"output #{i}\n{g}\n{e}"
            continue
        r = rtol if rtol is not None else 10 * TOLERANCES[e.dtype]
        scale = max(1.0, float(e.float().abs().nan_to_num(0, 0, 0).max()))
        torch.testing.assert_close(g, e, rtol=r, atol=r * scale, equal_nan=True, msg=lambda m: f"output #{i}: {m}")


def check_lowering(text: str, rtol: float | None = None, seeds=(0, 1), half_in_f32: bool = True, module=None,
                   inputs=None, transpose_tile: int | None = None, reduce_lanes: int | None = None,
                   row_lanes: int | None = None, merge_rows: bool = False):
    """Fuse, lower, check the contract, and compare the kernels' outputs with
    the interpreter's on the graph before fusion; the KernelProgramIR."""
    before = module if module is not None else parse(text)
    program = lower_to_kernels(fuse(before), half_in_f32=half_in_f32, transpose_tile=transpose_tile,
                               reduce_lanes=reduce_lanes, row_lanes=row_lanes, merge_rows=merge_rows)
    verify_module(program.host)
    program.kernels.verify()
    assert kernels_of(program), "no kernels"
    for k in kernels_of(program):
        check_contract(k, half_in_f32)
    for seed in seeds:
        ins = inputs(seed) if inputs is not None else random_inputs(before, seed)
        expected = interpret(before, *(x.clone() for x in ins))
        compare(run_program(program, [x.clone() for x in ins]), expected, rtol)
    return program


def the_kernel(program):
    (k,) = kernels_of(program)
    return k


def grid_of(kernel) -> list[int]:
    par = next(op for op in kernel.body.block.ops if isinstance(op, scf.ParallelOp))
    return [v.owner.value.value.data for v in par.upperBound]


def fn(args: str, result: str, body: str, ret: str) -> str:
    types = result[1:-1] if result.startswith("(") else result
    return f"func.func @forward({args}) -> {result} {{\n{body}\n  func.return {ret} : {types}\n}}"


# -- layouts and grids ---------------------------------------------------------------------------
def test_pointwise_nchw_to_nhwc_with_broadcast():
    x, y, b = T((1, 8, 4, 6)), T((1, 8, 4, 6), layout="nhwc"), T((8, 1, 1))
    program = check_lowering(fn(f"%x: {x}, %b: {b}", y, f"""
  %s = tsr.add %x, %b : ({x}, {b}) -> {y}
  %r = tsr.relu %s : ({y}) -> {y}""", "%r"))
    k = the_kernel(program)
    args = [a.type for a in k.body.block.args]
    assert args[0] == memref_type(parse_type(x)) and isinstance(args[2].layout, StridedLayoutAttr)
    assert [s.data for s in args[2].layout.strides.data] == list(strides_for((1, 8, 4, 6), (0, 2, 3, 1)))
    assert grid_of(k) == [4, 6], "parallel over h, w (n is 1); c, contiguous, is the inner loop"
    loop = next(op for op in k.walk() if isinstance(op, scf.ForOp))
    assert loop.ub.owner.value.value.data == 8
    assert list(k.attributes["tsr.outputs"].get_values()) == [2]
    launch = next(op for op in program.host.walk() if isinstance(op, tsr.LaunchOp))
    assert launch.callee.root_reference.data == k.sym_name.data


def test_relayout_loops_walk_both_contiguous_dims_innermost():
    """NDHWC -> NCDHW (a channels-last conv's output back to eager's layout):
    the output's w stays the inner loop and the input's c becomes the last grid
    dim, so one (c, w) tile is read across and written along while it is in L1;
    the output's own order would put c outermost, (8, 3, 4)."""
    x, y = T((1, 8, 3, 4, 5), layout="ndhwc"), T((1, 8, 3, 4, 5), layout="ncdhw")
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.relayout %x : ({x}) -> {y}""", "%r"))
    k = the_kernel(program)
    assert grid_of(k) == [3, 4, 8]
    loop = next(op for op in k.walk() if isinstance(op, scf.ForOp))
    assert loop.ub.owner.value.value.data == 5


# -- transpose tiles (x86: a relayout read 8 x 8 at a time and transposed in registers) ----------
def op_names(kernel) -> list[str]:
    return [op.name for op in kernel.walk()]


@pytest.mark.parametrize("shape, src, dst, elem", [
    ((1, 16, 8, 24), "nchw", "nhwc", "f32"),        # whole tiles only
    ((2, 19, 3, 11), "nhwc", "nchw", "f32"),        # edge tiles along both tiled dims, batch 2
    ((1, 12, 2, 9, 10), "ncdhw", "ndhwc", "bf16"),
    ((1, 9, 4, 8), "nchw", "nhwc", "f16"),
    ((1, 8, 2, 16), "nhwc", "nchw", "i32"),
])
def test_relayout_reads_through_transpose_tiles(shape, src, dst, elem):
    x, y = T(shape, elem, layout=src), T(shape, elem, layout=dst)
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.relayout %x : ({x}) -> {y}""", "%r"), transpose_tile=8)
    k = the_kernel(program)
    names = op_names(k)
    reads = [op for op in k.walk() if op.name == "vector.transfer_read"]
    assert sum(op.operands[0] is k.body.block.args[0] for op in reads) == 8 and names.count("vector.shuffle") == 24
    assert names.count("vector.store") == 8 and names.count("memref.alloca") == 1
    # f32 tiles are read back and written a row (a vector) at a time; f16, bf16 and i32 ones element by element
    assert (len(reads) == 9) == (elem == "f32") == (names.count("vector.transfer_write") == 1)
    whole = all(shape[d] % 8 == 0 for d in (1, len(shape) - 1))
    assert ("scf.if" in names) != whole, "edge tiles take the bounds-checked loops"


def test_transpose_tiles_feed_the_fused_body():
    """ResNet's last kernel: relu(conv_out_nhwc + x_nchw) written NCHW; only
    the NHWC input goes through the tile, the NCHW one is read along w; each
    row of a tile is computed as vectors (a row of the tile, one of the NCHW input)."""
    a, b = T((1, 16, 5, 16), layout="nhwc"), T((1, 16, 5, 16))
    program = check_lowering(fn(f"%a: {a}, %b: {b}", b, f"""
  %s = tsr.add %a, %b : ({a}, {b}) -> {b}
  %r = tsr.relu %s : ({b}) -> {b}""", "%r"), transpose_tile=8)
    k = the_kernel(program)
    reads = [op.operands[0] for op in k.walk() if op.name == "vector.transfer_read"]
    arg_a, arg_b = k.body.block.args[:2]
    assert reads.count(arg_a) == 8 and reads.count(arg_b) == 1 and len(reads) == 10
    assert any(op.name == "arith.addf" and isinstance(op.results[0].type, VectorType) for op in k.walk())
    writes = [op for op in k.walk() if op.name == "vector.transfer_write"]
    assert len(writes) == 1 and writes[0].operands[1] is k.body.block.args[2], "a row of the output at once"
    assert grid_of(k) == [2, 5, 2], "tiles of c, then h, then tiles of w"


@pytest.mark.parametrize("body, why", [
    ("%t = tsr.permute %x {{dims = array<i64: 0, 1, 3, 2>}} : ({x}) -> {x}\n  %r = tsr.add %x, %t : ({x}, {x}) -> {y}",
     "also read at a permuted index"),
    ("%r = tsr.relayout %x : ({x}) -> {y}", "small dims"),
])
def test_no_transpose_tiles_where_they_do_not_apply(body, why):
    shape = (1, 16, 16, 16) if why != "small dims" else (1, 4, 3, 6)
    x, y = T(shape, layout="nhwc"), T(shape, layout="nchw")
    program = check_lowering(fn(f"%x: {x}", y, "  " + body.format(x=x, y=y), "%r"), transpose_tile=8)
    assert "vector.shuffle" not in op_names(the_kernel(program)), why


@pytest.mark.parametrize("shape, elem, vectors", [
    ((2, 3, 5, 12), "f32", 1),      # a vector of 8, then 4 elements one by one
    ((1, 4, 6, 16), "f32", 2),
    ((1, 4, 6, 16), "f64", 2),
    ((1, 4, 6, 7), "f32", 0),       # shorter than a vector: the plain loop
    ((1, 4, 6, 16), "i32", 0),      # not a float: no vector form
])
def test_pointwise_rows_as_vectors(shape, elem, vectors):
    """``row_lanes``: a static innermost loop as vectors of 8 lanes (``_vector_row``),
    a broadcast operand splat; NaN and infinities come out as the interpreter's."""
    x, b = T(shape, elem), T((shape[1], 1, 1), elem)

    def inputs(seed):
        xs = random_inputs(parse(text), seed)
        if elem != "i32":
            xs[0].view(-1)[::5] = float("nan")
            xs[0].view(-1)[1::7] = float("inf")
        return xs
    op = "tsr.sigmoid" if elem == "f32" else "tsr.relu"
    text = fn(f"%x: {x}, %y: {x}, %b: {b}", x, f"""
  %p = tsr.mul %x, %y : ({x}, {x}) -> {x}
  %s = tsr.add %p, %b : ({x}, {b}) -> {x}
  %r = {op} %s : ({x}) -> {x}""", "%r")
    if elem == "i32":
        text = text.replace("\n  %r = tsr.relu %s : ({x}) -> {x}".format(x=x), "").replace("return %r", "return %s")
    k = the_kernel(check_lowering(text, inputs=inputs, row_lanes=8))
    assert op_names(k).count("vector.transfer_write") == (1 if vectors else 0)
    trips = [op.ub.owner.value.value.data for op in k.walk() if isinstance(op, scf.ForOp)]
    rest = [shape[-1] % 8] if shape[-1] % 8 else []
    assert trips == ([vectors, *rest] if vectors else [shape[-1]]), "vectors, then the rest one by one"


def test_transpose_tiles_off_without_a_width():
    x, y = T((1, 16, 8, 24), layout="nchw"), T((1, 16, 8, 24), layout="nhwc")
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.relayout %x : ({x}) -> {y}""", "%r"))
    assert not any(n.startswith("vector.") for n in op_names(the_kernel(program)))


@pytest.mark.parametrize("features", ["+avx512f", "+avx2,+fma"])
def test_transpose_tiles_assemble_to_shuffles_not_gathers(features):
    from tessera.compiler.codegen import assembly
    from tessera.compiler.targets import codegen_target

    x, y = T((1, 64, 56, 56), layout="nhwc"), T((1, 64, 56, 56))
    program = lower_to_kernels(fuse(parse(fn(f"%x: {x}", y, f"""
  %r = tsr.relayout %x : ({x}) -> {y}""", "%r"))), transpose_tile=8)
    asm = assembly(program.kernels, codegen_target("x86", features=features))
    assert "gather" not in asm and "scatter" not in asm
    assert re.search(r"\bv(permt2ps|unpck[lh]ps|shufps|perm2f128|permps)\b", asm), "an in-register transpose"


@pytest.mark.parametrize("width", [2, 4, 8, 16])
def test_interleave_rounds_transpose(width):
    from tessera.compiler.lowering.transpose_tiles import interleave_masks

    rows = [list(range(i * width, (i + 1) * width)) for i in range(width)]
    lo, hi = interleave_masks(width)
    for _ in range(width.bit_length() - 1):
        nxt = []
        for j in range(width // 2):
            both = rows[j] + rows[j + width // 2]
            nxt += [[both[m] for m in lo], [both[m] for m in hi]]
        rows = nxt
    assert rows == [list(range(c, width * width, width)) for c in range(width)]


def parse_type(text: str):
    module = parse(f"func.func @f(%x: {text}) -> {text} {{\n  func.return %x : {text}\n}}")
    return module.body.block.ops.first.body.block.args[0].type


def test_memref_types_follow_layouts():
    assert memref_type(parse_type(T((2, 3)))) == MemRefType(parse_type(T((2, 3))).get_element_type(), [2, 3])
    ndhwc = memref_type(parse_type(T((1, 32, 4, 16, 16), layout="ndhwc")))
    assert [s.data for s in ndhwc.layout.strides.data] == [32768, 1, 8192, 512, 32]
    assert str(memref_type(parse_type(T((4,), "ui8")))) == "memref<4xi8>"


def test_causal_pad_5d_channels_last():
    """``F.pad(x, (1, 1, 1, 1, 2, 0))`` after SiLU, on NDHWC data."""
    x = T((1, 4, 3, 4, 5), layout="ndhwc")
    p = T((1, 4, 5, 6, 7), layout="ndhwc")
    program = check_lowering(fn(f"%x: {x}", p, f"""
  %s = tsr.silu %x : ({x}) -> {x}
  %z = tsr.constant 0.000000e+00 : f32
  %y = tsr.pad %s, %z {{low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}} : ({x}, f32) -> {p}""", "%y"))
    k = the_kernel(program)
    assert grid_of(k) == [5, 6, 7]
    assert any(isinstance(op, arith.SelectOp) and op.result.type.name == "f32" for op in k.walk())


def test_pad_with_crop_and_nonzero_value_nchw_to_nhwc():
    x, p = T((1, 3, 5, 4)), T((1, 3, 4, 7), layout="nhwc")
    check_lowering(fn(f"%x: {x}", p, f"""
  %v = tsr.constant -1.500000e+00 : f32
  %y = tsr.pad %x, %v {{low = array<i64: 0, 0, -1, 2>, high = array<i64: 0, 0, 0, 1>}} : ({x}, f32) -> {p}""", "%y"))


# -- GroupNorm, reductions --------------------------------------------------------------------
def groupnorm(elem: str = "f32", layout: str = "nhwc", const: str = "f32") -> str:
    x = T((2, 8, 3, 5), elem, layout)
    g, s, c, c3 = T((2, 4, 30), elem), T((2, 4, 1), elem), T((8,), elem), T((8, 1, 1), elem)
    return fn(f"%x: {x}, %w: {c}, %b: {c}", x, f"""
  %r = tsr.reshape %x : ({x}) -> {g}
  %v = tsr.var %r {{dims = array<i64: 2>, keepdim = true, correction = 0.0 : f64}} : ({g}) -> {s}
  %m = tsr.mean %r {{dims = array<i64: 2>, keepdim = true}} : ({g}) -> {s}
  %eps = tsr.constant 1.000000e-05 : {const}
  %ve = tsr.add %v, %eps : ({s}, {const}) -> {s}
  %rs = tsr.rsqrt %ve : ({s}) -> {s}
  %d = tsr.sub %r, %m : ({g}, {s}) -> {g}
  %n = tsr.mul %d, %rs : ({g}, {s}) -> {g}
  %n4 = tsr.reshape %n : ({g}) -> {x}
  %w4 = tsr.reshape %w : ({c}) -> {c3}
  %b4 = tsr.reshape %b : ({c}) -> {c3}
  %sc = tsr.mul %n4, %w4 : ({x}, {c3}) -> {x}
  %y = tsr.add %sc, %b4 : ({x}, {c3}) -> {x}
  %a = tsr.silu %y : ({x}) -> {x}""", "%a")


def test_groupnorm_channels_last():
    program = check_lowering(groupnorm())
    red, pw = kernels_of(program)
    assert grid_of(red) == [2, 4], "one grid point per (n, group)"
    adds = [op for op in red.walk() if isinstance(op, arith.AddfOp) and op.fastmath.data]
    assert len(adds) == 2, "one reassoc sum for mean and var's first pass, one for the squares"
    assert sum(isinstance(op, scf.ForOp) for op in red.walk()) == 2, "two passes over one reduced dim"
    assert grid_of(pw) == [2, 3, 5]


@pytest.mark.parametrize("elem", ["bf16", "f16"])
def test_groupnorm_half_with_typed_constants(elem):
    program = check_lowering(groupnorm(elem, const=elem), rtol=3e-2)
    text = text_of(program.kernels)
    assert "arith.extf" in text and "arith.truncf" in text
    # The literal eps is a constant of the half type, widened where it is used.
    consts = [op for op in program.kernels.walk() if isinstance(op, arith.ConstantOp) and op.result.type.name == elem]
    assert [abs(c.value.value.data - 1e-5) < 1e-7 for c in consts] == [True]
    assert all(isinstance(u.operation, arith.ExtFOp) for c in consts for u in c.result.uses)


def test_groupnorm_bf16_native_compute():
    program = check_lowering(groupnorm("bf16", const="bf16"), rtol=6e-2, half_in_f32=False)
    assert any(isinstance(op, arith.MulfOp) and op.result.type.name == "bf16" for op in program.kernels.walk())


@pytest.mark.parametrize(("op", "dims", "keep", "extra"), [
    ("sum", "1, 3", "true", ""),
    ("mean", "0, 2", "false", ""),
    ("amax", "3", "false", ""),
    ("amin", "", "false", ""),
    ("var", "1, 2", "true", ", correction = 1.0 : f64"),
])
def test_reductions_over_channels_last_input(op, dims, keep, extra):
    x = T((2, 6, 3, 4), layout="nhwc")
    shape = [2, 6, 3, 4]
    red = [int(d) for d in dims.split(", ")] if dims else [0, 1, 2, 3]
    out = [1 if d in red else n for d, n in enumerate(shape) if keep == "true" or d not in red]
    y = T(tuple(out)) if out else "tensor<f32>"
    check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.{op} %x {{dims = array<i64{': ' + dims if dims else ''}>, keepdim = {keep}{extra}}} : ({x}) -> {y}""", "%r"))


@pytest.mark.parametrize(("op", "extra"), [("sum", ""), ("mean", ""), ("amax", ""), ("amin", ""),
                                           ("var", ", correction = 1.0 : f64")])
@pytest.mark.parametrize(("shape", "lanes", "keep"), [
    ((1, 32, 5, 8), 16, "true"),    # 2 grid points of 16 lanes; w = 8: 4 chains
    ((2, 24, 3, 3), 8, "false"),    # 24 = 3 x 8 lanes; w = 3: one chain
    ((1, 6, 4, 4), 2, "true"),      # the widest lanes dividing 6
])
def test_reductions_over_space_of_channels_last_in_vector_lanes(op, extra, shape, lanes, keep):
    """A channels-last tensor reduced over h, w: each grid point computes
    ``lanes`` channels at once in vector accumulators, as the kernel
    evaluator's lanes check against the interpreter."""
    x = T(shape, layout="nhwc")
    out = [n if d < 2 else 1 for d, n in enumerate(shape)] if keep == "true" else list(shape[:2])
    y = T(tuple(out))
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.{op} %x {{dims = array<i64: 2, 3>, keepdim = {keep}{extra}}} : ({x}) -> {y}""", "%r"), reduce_lanes=16)
    k = the_kernel(program)
    assert grid_of(k) == [n for n in (shape[0], shape[1] // lanes) if n > 1]
    assert op_names(k).count("vector.extract") == lanes * (2 if op == "var" else 1)  # var: its sum and squares
    assert f"vector<{lanes}xf32>" in text_of(k)


def test_vector_lanes_keep_nan_and_the_scalar_path_where_they_do_not_apply():
    """amax over space propagates NaN lane by lane; an input computed in the
    kernel (silu) is computed as vectors; a half input keeps one channel per grid point."""
    x = T((1, 16, 4, 4), layout="nhwc")
    y = T((1, 16, 1, 1))

    def nan_input(seed):
        t = torch.randn(1, 16, 4, 4, generator=torch.Generator().manual_seed(seed)).to(memory_format=torch.channels_last)
        t[0, 3, 2, 1] = float("nan")
        return [t]
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %r = tsr.amax %x {{dims = array<i64: 2, 3>, keepdim = true}} : ({x}) -> {y}""", "%r"), reduce_lanes=16, inputs=nan_input)
    assert "vector.broadcast" in op_names(the_kernel(program))
    (got,) = run_program(program, nan_input(0))
    assert got[0, 3].isnan().all() and not got[0, 4].isnan().any()
    program = check_lowering(fn(f"%x: {x}", y, f"""
  %s = tsr.silu %x : ({x}) -> {x}
  %r = tsr.mean %s {{dims = array<i64: 2, 3>, keepdim = true}} : ({x}) -> {y}""", "%r"), reduce_lanes=16)
    names = op_names(the_kernel(program))
    assert "vector.extract" in names and "memref.load" not in names
    h, hy = T((1, 16, 4, 4), "f16", layout="nhwc"), T((1, 16, 1, 1), "f16")
    program = check_lowering(fn(f"%x: {h}", hy, f"""
  %r = tsr.sum %x {{dims = array<i64: 2, 3>, keepdim = true}} : ({h}) -> {hy}""", "%r"), reduce_lanes=16)
    assert grid_of(the_kernel(program)) == [16]


def test_vector_lanes_compute_what_they_sum():
    """BatchNorm's backward sums over a channels-last tensor, of values computed
    in the kernel: ``dy * (x - mean)`` and a GEMM's rows read through a reshape
    and a permute, each a vector along ``c``; a ReLU's mask and a bf16 input, which
    have no vector form here, lane by lane. Each equals the interpreter's."""
    x, c = T((2, 32, 3, 5), layout="nhwc"), T((1, 32, 1, 1))
    rows, hwc = T((30, 32)), T((2, 3, 5, 32))
    h, r = T((2, 32, 3, 5), "bf16", layout="nhwc"), T((32,))
    program = check_lowering(fn(f"%x: {x}, %dy: {x}, %mean: {c}, %mm: {rows}, %h: {h}", f"({r}, {r}, {r}, {r})", f"""
  %d = tsr.sub %x, %mean : ({x}, {c}) -> {x}
  %p = tsr.mul %dy, %d : ({x}, {x}) -> {x}
  %z = tsr.constant 0.000000e+00 : f32
  %m = tsr.cmp le, %x, %z : ({x}, f32) -> {T((2, 32, 3, 5), "i1", layout="nhwc")}
  %w = tsr.where %m, %z, %dy : ({T((2, 32, 3, 5), "i1", layout="nhwc")}, f32, {x}) -> {x}
  %v = tsr.reshape %mm : ({rows}) -> {hwc}
  %t = tsr.permute %v {{dims = array<i64: 0, 3, 1, 2>}} : ({hwc}) -> {x}
  %q = tsr.mul %t, %d : ({x}, {x}) -> {x}
  %f = tsr.convert %h : ({h}) -> {x}
  %e = tsr.mul %f, %p : ({x}, {x}) -> {x}
  %s0 = tsr.sum %p {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {r}
  %s1 = tsr.sum %w {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {r}
  %s2 = tsr.sum %q {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {r}
  %s3 = tsr.sum %e {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {r}""", "%s0, %s1, %s2, %s3"),
        reduce_lanes=16)
    k = the_kernel(program)
    names = op_names(k)
    assert grid_of(k) == [2] and names.count("vector.extract") == 4 * 16
    assert names.count("vector.insert") == 2 * 15  # the mask's and the bf16 input's lanes
    assert names.count("vector.transfer_read") == 4  # x, dy, mean, mm


def test_vector_lanes_read_windows_of_a_padded_input():
    """A depthwise weight gradient's taps, ``sum(dy * pad(x)[window])`` over a channels-last
    plane: the pad and slices along h and w keep the channels a vector (one read each,
    the pad's border a select), no lane computed alone; equal to the interpreter's."""
    x, dy, r = T((2, 32, 5, 6), layout="nhwc"), T((2, 32, 3, 3), layout="nhwc"), T((32,))
    p, rows = T((2, 32, 7, 8), layout="nhwc"), T((2, 32, 3, 8), layout="nhwc")
    taps = []
    for i, j in ((0, 0), (1, 2), (2, 1)):
        taps.append(f"""
  %r{i}{j} = tsr.slice %p {{dim = 2 : i64, start = {i} : i64, end = {i + 5} : i64, step = 2 : i64}} : ({p}) -> {rows}
  %w{i}{j} = tsr.slice %r{i}{j} {{dim = 3 : i64, start = {j} : i64, end = {j + 5} : i64, step = 2 : i64}} : ({rows}) -> {dy}
  %m{i}{j} = tsr.mul %dy, %w{i}{j} : ({dy}, {dy}) -> {dy}
  %s{i}{j} = tsr.sum %m{i}{j} {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({dy}) -> {r}""")
    program = check_lowering(fn(f"%x: {x}, %dy: {dy}", f"({r}, {r}, {r})", f"""
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %z {{low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>}} : ({x}, f32) -> {p}""" + "".join(taps),
        "%s00, %s12, %s21"), reduce_lanes=16)
    names = op_names(the_kernel(program))
    assert "vector.insert" not in names and "memref.load" not in names and "vector.extract" in names


@pytest.mark.parametrize(("shape", "dims", "loops"), [
    ((2, 6, 7, 5), "0, 2, 3", [2, 35]),        # BatchNorm over NCHW: n apart, then one run of h * w
    ((2, 4, 3, 7, 5), "2, 3, 4", [105]),       # GroupNorm's [n, g, c/g, h, w]: one run of 105
    ((3, 7, 5), "1", [7]),                      # one dim: its own loop
])
def test_reduced_dims_next_to_each_other_in_memory_share_a_loop(shape, dims, loops):
    """NCHW reductions over space loop once over each contiguous run (a row of
    ``W`` alone is too short to vectorize); the split index reads the same elements."""
    x = T(shape)
    red = [int(d) for d in dims.split(", ")]
    y = T(tuple(1 if d in red else n for d, n in enumerate(shape)))
    program = check_lowering(fn(f"%x: {x}", f"({y}, {y})", f"""
  %v = tsr.var %x {{dims = array<i64: {dims}>, keepdim = true, correction = 1.0 : f64}} : ({x}) -> {y}
  %m = tsr.amax %x {{dims = array<i64: {dims}>, keepdim = true}} : ({x}) -> {y}""", "%v, %m"))
    fors = [op for op in the_kernel(program).walk() if isinstance(op, scf.ForOp)]
    assert [op.ub.owner.value.value.data for op in fors[:len(loops)]] == loops


def test_batch_statistics_of_a_relayout_read_channels_last_in_vector_lanes():
    """BatchNorm's statistics in training, of a channels-last conv's output typed
    NCHW (``tsr.relayout`` fused into the kernel): the reduction reads the stored
    tensor, channels innermost, 16 lanes a grid point; the loops walk n, h, w."""
    x, c = T((2, 32, 3, 5), layout="nhwc"), T((2, 32, 3, 5))
    y = T((1, 32, 1, 1))
    program = check_lowering(fn(f"%x: {x}", f"({y}, {y})", f"""
  %c = tsr.relayout %x : ({x}) -> {c}
  %v = tsr.var %c {{dims = array<i64: 0, 2, 3>, keepdim = true, correction = 0.0 : f64}} : ({c}) -> {y}
  %m = tsr.mean %c {{dims = array<i64: 0, 2, 3>, keepdim = true}} : ({c}) -> {y}""", "%v, %m"), reduce_lanes=16)
    k = the_kernel(program)
    assert grid_of(k) == [2] and op_names(k).count("vector.transfer_read") >= 2
    loops = [op for op in k.walk() if isinstance(op, scf.ForOp)]
    assert loops[0].ub.owner.value.value.data == 2 * 3 * 5, "n, h, w in one loop"


@pytest.mark.parametrize("features", ["+avx512f", "+avx2,+fma"])
@pytest.mark.parametrize(("op", "instruction"), [("mean", "vaddps"), ("amax", "vmaxps")])
def test_vector_lanes_assemble_to_vector_ops_not_gathers(features, op, instruction):
    from tessera.compiler.codegen import assembly
    from tessera.compiler.targets import codegen_target

    x, y = T((1, 32, 56, 56), layout="nhwc"), T((1, 32, 1, 1))
    program = lower_to_kernels(fuse(parse(fn(f"%x: {x}", y, f"""
  %r = tsr.{op} %x {{dims = array<i64: 2, 3>, keepdim = true}} : ({x}) -> {y}""", "%r"))), reduce_lanes=16)
    asm = assembly(program.kernels, codegen_target("x86", features=features))
    assert "gather" not in asm
    assert re.search(rf"\b{instruction}\s+[^\n]*%[yz]mm", asm), "vector ops"


def test_integer_sum_and_bool_compare():
    x = T((4, 6), "i32")
    y = T((4,), "i64")
    check_lowering(fn(f"%x: {x}", f"({y}, {T((4, 6), 'i1')})", f"""
  %c = tsr.convert %x : ({x}) -> {T((4, 6), 'i64')}
  %s = tsr.sum %c {{dims = array<i64: 1>, keepdim = false}} : ({T((4, 6), 'i64')}) -> {y}
  %z = tsr.constant 0 : i32
  %m = tsr.cmp gt, %x, %z : ({x}, i32) -> {T((4, 6), 'i1')}""", "%s, %m"))


def test_one_reduction_kernel_for_mean_and_var_of_one_value():
    x = T((3, 16))
    r = T((3, 1))
    program = check_lowering(fn(f"%x: {x}", f"({r}, {r})", f"""
  %m = tsr.mean %x {{dims = array<i64: 1>, keepdim = true}} : ({x}) -> {r}
  %v = tsr.var %x {{dims = array<i64: 1>, keepdim = true, correction = 0.0 : f64}} : ({x}) -> {r}""", "%m, %v"))
    k = the_kernel(program)
    assert list(k.attributes["tsr.outputs"].get_values()) == [1, 2]


def test_variance_is_accurate_with_a_large_mean():
    x = T((2, 256))
    r = T((2, 1))
    module = parse(fn(f"%x: {x}", r, f"""
  %v = tsr.var %x {{dims = array<i64: 1>, keepdim = true, correction = 0.0 : f64}} : ({x}) -> {r}""", "%v"))
    data = torch.randn(2, 256) + 1000.0
    program = lower_to_kernels(fuse(module))
    (got,) = run_program(program, [data])
    torch.testing.assert_close(got, data.double().var(1, keepdim=True, correction=0).float(), rtol=1e-3, atol=1e-4)


# -- data movement ------------------------------------------------------------------------------
def test_permute_reshape_expand_slice():
    x = T((2, 3, 8))
    check_lowering(fn(f"%x: {x}, %b: {T((4, 1))}", T((4, 3, 2), layout=(2, 0, 1)), f"""
  %p = tsr.permute %x {{dims = array<i64: 2, 0, 1>}} : ({x}) -> {T((8, 2, 3))}
  %s = tsr.slice %p {{dim = 0 : i64, start = 1 : i64, end = 8 : i64, step = 2 : i64}} : ({T((8, 2, 3))}) -> {T((4, 2, 3))}
  %r = tsr.reshape %s : ({T((4, 2, 3))}) -> {T((4, 6))}
  %q = tsr.reshape %r : ({T((4, 6))}) -> {T((4, 3, 2))}
  %e = tsr.expand %b : ({T((4, 1))}) -> {T((3, 4, 1))}
  %f = tsr.permute %e {{dims = array<i64: 1, 0, 2>}} : ({T((3, 4, 1))}) -> {T((4, 3, 1))}
  %y = tsr.mul %q, %f : ({T((4, 3, 2))}, {T((4, 3, 1))}) -> {T((4, 3, 2), layout=(2, 0, 1))}""", "%y"))


def test_concat_along_the_contiguous_dim_is_a_loop_per_operand():
    """A channels-last concat along c, read at the kernel's index: the loop over
    c splits into one loop per operand (no choosing per element), each operand
    computed only in its own loop; two concats split at the union of their
    bounds."""
    a, b, c = T((1, 3, 2, 4), layout="nhwc"), T((1, 5, 2, 4)), T((1, 2, 2, 4), layout="nhwc")
    y = T((1, 10, 2, 4), layout="nhwc")
    program = check_lowering(fn(f"%a: {a}, %b: {b}, %c: {c}", y, f"""
  %e = tsr.exp %b : ({b}) -> {b}
  %y = tsr.concat %a, %e, %c {{dim = 1 : i64}} : ({a}, {b}, {c}) -> {y}""", "%y"))
    k = the_kernel(program)
    assert not any(isinstance(op, scf.IfOp) for op in k.walk())
    loops = [op for op in k.walk() if isinstance(op, scf.ForOp)]
    assert [op.ub.owner.value.value.data for op in loops] == [3, 5, 2]
    assert [op.name for op in loops[1].body.walk()].count("math.exp") == 1
    assert not any(op.name == "math.exp" for loop in (loops[0], loops[2]) for op in loop.body.walk())
    gpu = lower_to_kernels(fuse(parse(fn(f"%a: {a}, %b: {b}, %c: {c}", y, f"""
  %y = tsr.concat %a, %b, %c {{dim = 1 : i64}} : ({a}, {b}, {c}) -> {y}""", "%y"))), concat_loops=False)
    assert sum(isinstance(op, scf.IfOp) for op in the_kernel(gpu).walk()) == 2  # a GPU's grid takes the one loop
    d, e = T((1, 6, 2, 4), layout="nhwc"), T((1, 4, 2, 4), layout="nhwc")
    program = check_lowering(fn(f"%a: {a}, %b: {b}, %c: {c}, %d: {d}, %e: {e}", y, f"""
  %x = tsr.concat %a, %b, %c {{dim = 1 : i64}} : ({a}, {b}, {c}) -> {y}
  %z = tsr.concat %d, %e {{dim = 1 : i64}} : ({d}, {e}) -> {y}
  %y = tsr.add %x, %z : ({y}, {y}) -> {y}""", "%y"))
    assert [op.ub.owner.value.value.data for op in the_kernel(program).walk() if isinstance(op, scf.ForOp)] == [3, 3, 2, 2]


def test_concat_across_the_loops_is_a_chain_of_ifs():
    """A concat along another dim (h of NHWC), or read at a shifted index
    (through a slice), chooses its operand per element."""
    a, b = T((1, 4, 2, 3), layout="nhwc"), T((1, 4, 3, 3), layout="nhwc")
    y = T((1, 4, 5, 3), layout="nhwc")
    program = check_lowering(fn(f"%a: {a}, %b: {b}", y, f"""
  %y = tsr.concat %a, %b {{dim = 2 : i64}} : ({a}, {b}) -> {y}""", "%y"))
    assert sum(isinstance(op, scf.IfOp) for op in the_kernel(program).walk()) == 1
    c, d, w = T((1, 3, 2, 4), layout="nhwc"), T((1, 5, 2, 4), layout="nhwc"), T((1, 8, 2, 4), layout="nhwc")
    s = T((1, 6, 2, 4), layout="nhwc")
    program = check_lowering(fn(f"%c: {c}, %d: {d}, %w: {w}", s, f"""
  %x = tsr.concat %c, %d {{dim = 1 : i64}} : ({c}, {d}) -> {w}
  %s = tsr.slice %x {{dim = 1 : i64, start = 2 : i64, end = 8 : i64, step = 1 : i64}} : ({w}) -> {s}""", "%s"))
    assert sum(isinstance(op, scf.IfOp) for op in the_kernel(program).walk()) == 1


@pytest.mark.parametrize(("src", "dst", "scales"), [
    ((2, 4, 3), (2, 8, 6), "2.0, 2.0"),
    ((2, 3, 3), (4, 9, 3), None),
    ((3, 5, 2), (5, 7, 3), None),
])
def test_upsample_nearest(src, dst, scales):
    x = T((1, 2, *src), layout="ndhwc")
    y = T((1, 2, *dst), layout="ndhwc")
    prop = f", scales = array<f64: 1.0, {scales}>" if scales else ""
    check_lowering(fn(f"%x: {x}", y, f"""
  %u = tsr.upsample %x {{mode = "nearest"{prop}}} : ({x}) -> {y}""", "%u"))


@pytest.mark.parametrize(("src", "dst", "scales", "shifts"), [
    ((1, 12, 3, 5, 5), (1, 3, 3, 8, 8), "1, 2, 2", "0, 0, 1, 0, 1"),  # the video VAE's (1, 2, 2) phases
    ((2, 6, 6, 4), (2, 2, 12, 4), "3, 1", "0, 0, 1, 0"),            # 3 phases with uneven shifts
])
def test_polyphase_interleave(src, dst, scales, shifts):
    x = T(src, layout="ndhwc" if len(src) == 5 else "nhwc")
    y = T(dst)
    check_lowering(fn(f"%x: {x}", y, f"""
  %y = tsr.polyphase_interleave %x {{scales = array<i64: {scales}>, shifts = array<i64: {shifts}>}} : ({x}) -> {y}""", "%y"))


# -- dtypes and elementwise semantics -------------------------------------------------------------
def test_bf16_convert_rounds_and_constants_are_typed():
    x = T((4, 8))
    b = T((4, 8), "bf16")
    program = check_lowering(fn(f"%x: {x}, %h: {b}", x, f"""
  %c = tsr.convert %x : ({x}) -> {b}
  %k = tsr.constant 3.140625e+00 : bf16
  %m = tsr.mul %c, %k : ({b}, bf16) -> {b}
  %a = tsr.add %m, %h : ({b}, {b}) -> {b}
  %y = tsr.convert %a : ({b}) -> {x}""", "%y"), rtol=1e-2)
    (k,) = [op for op in program.kernels.walk() if isinstance(op, arith.ConstantOp) and op.result.type.name == "bf16"]
    assert k.value.value.data == 3.140625
    assert "arith.truncf" in text_of(program.kernels), "converting to bf16 rounds even when computing in f32"


def test_int8_and_uint8():
    a, u = T((4, 8), "i8"), T((4, 8), "ui8")
    f = T((4, 8))
    check_lowering(fn(f"%a: {a}, %u: {u}", f"({f}, {a}, {T((4, 8), 'i1')})", f"""
  %fa = tsr.convert %a : ({a}) -> {f}
  %fu = tsr.convert %u : ({u}) -> {f}
  %s = tsr.add %fa, %fu : ({f}, {f}) -> {f}
  %r = tsr.relu %a : ({a}) -> {a}
  %m = tsr.maximum %r, %a : ({a}, {a}) -> {a}
  %k = tsr.constant 200 : ui8
  %c = tsr.cmp gt, %u, %k : ({u}, ui8) -> {T((4, 8), 'i1')}""", "%s, %m, %c"))


@pytest.mark.parametrize("body", [
    "%y = tsr.gelu %x : (X) -> X",
    '%y = tsr.gelu %x {approximate = "tanh"} : (X) -> X',
    "%y = tsr.sigmoid %x : (X) -> X",
    "%a = tsr.abs %x : (X) -> X\n  %e = tsr.constant 2.000000e+00 : f32\n  %y = tsr.pow %a, %e : (X, f32) -> X",
    "%a = tsr.abs %x : (X) -> X\n  %e = tsr.constant 0.7 : f32\n  %y = tsr.pow %a, %e : (X, f32) -> X",
    "%a = tsr.abs %x : (X) -> X\n  %e = tsr.constant -5.000000e-01 : f32\n  %y = tsr.pow %a, %e : (X, f32) -> X",
    "%t = tsr.tanh %x : (X) -> X\n  %r = tsr.reciprocal %t : (X) -> X\n  %e = tsr.erf %r : (X) -> X\n  %y = tsr.minimum %e, %x : (X, X) -> X",
    "%z = tsr.constant 0.0 : f32\n  %m = tsr.cmp le, %x, %z : (X, f32) -> B\n  %n = tsr.neg %x : (X) -> X\n  %y = tsr.where %m, %n, %x : (B, X, X) -> X",
    "%e = tsr.exp %x : (X) -> X\n  %l = tsr.log %e : (X) -> X\n  %s = tsr.sqrt %e : (X) -> X\n  %d = tsr.div %l, %s : (X, X) -> X\n  %y = tsr.sub %d, %x : (X, X) -> X",
])
def test_elementwise_semantics(body):
    x = T((3, 5))
    check_lowering(fn(f"%x: {x}", x, "  " + body.replace("X", x).replace("B", T((3, 5), "i1")), "%y"))


# -- host, errors, upstream MLIR ---------------------------------------------------------------
def test_host_keeps_library_ops_and_identical_kernels_are_shared():
    w = T((4, 4, 3, 3))
    wl = T((4, 4, 3, 3), layout="nhwc")
    x = T((1, 4, 3, 3), layout="nhwc")
    program = check_lowering(fn(f"%x: {x}, %w1: {w}, %w2: {w}", x, f"""
  %a = tsr.relayout %w1 : ({w}) -> {wl}
  %b = tsr.relayout %w2 : ({w}) -> {wl}
  %c = tsr.conv %x, %a {{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : ({x}, {wl}) -> {x}
  %d = tsr.conv %c, %b {{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : ({x}, {wl}) -> {x}""", "%d"))
    launches = [op.callee.root_reference.data for op in program.host.walk() if isinstance(op, tsr.LaunchOp)]
    assert launches == ["fused_0", "fused_0"] and len(kernels_of(program)) == 1
    assert [op.name for op in program.host.walk() if op.name.startswith("tsr.")].count("tsr.conv") == 2
    assert not any(isinstance(op, tsr.FusedOp) for op in program.host.walk())


def test_a_reduction_kernel_yielding_a_pointwise_value_is_refused():
    x, r = T((4, 8)), T((4, 1))
    module = parse(fn(f"%x: {x}", r, f"""
  %y = tsr.fused (%x) : ({x}) -> {r} {{
  ^bb0(%a: {x}):
    %s = tsr.sum %a {{dims = array<i64: 1>, keepdim = true}} : ({x}) -> {r}
    %e = tsr.exp %s : ({r}) -> {r}
    tsr.yield %e : {r}
  }}""", "%y"))
    fused = next(op for op in module.walk() if isinstance(op, tsr.FusedOp))
    with pytest.raises(LoweringError, match="only yield reduction results"):
        lower_fused(fused, "k")


def test_kernels_parse_and_verify_in_upstream_mlir():
    ir = pytest.importorskip("torch_mlir.ir")
    program = lower_to_kernels(fuse(parse(groupnorm("bf16", const="bf16"))))
    with ir.Context():
        module = ir.Module.parse(text_of(program.kernels))
        assert module.operation.verify()
        assert "scf.parallel" in str(module) and "fastmath<reassoc>" in str(module)


def test_run_kernel_checks_strides():
    x = T((2, 3), layout=(1, 0))
    program = lower_to_kernels(fuse(parse(fn(f"%x: {x}", x, f"  %y = tsr.exp %x : ({x}) -> {x}", "%y"))))
    with pytest.raises(AssertionError, match="strides"):
        run_kernel(the_kernel(program), [torch.randn(2, 3)])


# -- example models (small shapes) ----------------------------------------------------------------
@functools.cache
def model_graph(name: str):
    if name == "video_vae_small":
        mod = load_example_module("video_vae_block")
        model, args = mod.make_block(channels=8), (torch.randn(1, 8, 3, 6, 6),)
    else:
        model, args = load_example_module(name).example()
    (gm,) = capture(model, args, training=False).forward
    return run_stages(gm, "x86", upto="graph-opt")["graph-opt"].value, gm


@pytest.mark.parametrize("name", ["mlp", "int8_linear", "resnet_block", "video_vae_small"])
def test_example_models_lower_and_run(name):
    module, gm = model_graph(name)
    program = check_lowering("", module=module, seeds=(0,), inputs=lambda seed: placeholder_inputs(gm, seed), rtol=1e-4)
    assert all(not isinstance(op, tsr.FusedOp) for op in program.host.walk())


def test_dynamic_dims_reach_every_targets_kernels():
    """Every target's kernels take dynamic dims (``?``) at run time: the kernel
    signature names them; placements of such a type say why they have no strides."""
    from tessera.compiler import targets
    from tessera.compiler.codegen.kernel_form import kernel_signatures
    from tessera.compiler.placements import DynamicPlacement, placement_of
    from tessera.compiler.stages import fuse_kernels, lower_kernels

    text = (
        "func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
        "  %y = tsr.exp %x : (tensor<?x8xf32>) -> tensor<?x8xf32>\n"
        "  func.return %y : tensor<?x8xf32>\n"
        "}\n"
    )
    module = parse(text)
    for target in targets.names():
        kernels = lower_kernels(fuse_kernels(module, target), target).kernels
        (sig,) = kernel_signatures(kernels)
        assert sig.dynamic and "memref.dim" in str(kernels), target
    with pytest.raises(DynamicPlacement, match="known at run time"):
        placement_of(module.body.block.ops.first.args[0].type)


def test_vector_lanes_sum_long_runs_in_blocks():
    """A sum over 8x32x32 pixels of a channels-last tensor, 16 channels a vector in 4
    chains: each chain's 2048 steps are summed in blocks of ``BLOCK`` from zero, so the
    compiled sum of 8192 copies of 0.1 stays within 2e-6 of float64's (one run a chain
    drifts 1.6e-5: each addition's error grows with the running sum)."""
    from tessera.compiler.lowering.reductions import BLOCK

    x, y = T((8, 16, 32, 32), layout="nhwc"), T((16,))
    program = lower_to_kernels(fuse(parse(fn(f"%x: {x}", y, f"""
  %r = tsr.sum %x {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {y}""", "%r"))), reduce_lanes=16)
    fors = [op.ub.owner.value.value.data for op in the_kernel(program).walk() if isinstance(op, scf.ForOp)]
    assert fors == [8192 // 4 // BLOCK, BLOCK]
    ones = torch.full((8, 16, 32, 32), 0.1).to(memory_format=torch.channels_last)
    got = torch.compile(lambda t: t.sum((0, 2, 3)), backend="tessera", options={"strict": True})(ones)
    want = ones.double().sum((0, 2, 3))
    assert ((got.double() - want).abs() / want).max() < 2e-6


def test_vector_lanes_of_f64_read_and_multiply_as_vectors():
    """f64 summands: reads and arithmetic as vectors of f64; an exp, whose f64 form is a
    libm call, lane by lane. Each equals the interpreter's."""
    x, y = T((2, 16, 3, 5), "f64", layout="nhwc"), T((16,), "f64")
    program = check_lowering(fn(f"%x: {x}, %w: {x}", f"({y}, {y})", f"""
  %p = tsr.mul %x, %w : ({x}, {x}) -> {x}
  %e = tsr.exp %x : ({x}) -> {x}
  %s = tsr.sum %p {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {y}
  %t = tsr.sum %e {{dims = array<i64: 0, 2, 3>, keepdim = false}} : ({x}) -> {y}""", "%s, %t"), reduce_lanes=16)
    names = op_names(the_kernel(program))
    assert names.count("vector.transfer_read") == 2 and names.count("vector.insert") == 15  # the exp's lanes
    assert "vector<16xf64>" in text_of(the_kernel(program))


# -- rows of several dims ------------------------------------------------------------------------
@pytest.mark.parametrize("shape, layout, row, grid", [
    ((2, 24, 8, 8), "nchw", (2, 3), [2, 24]),          # h * w = 64: one row a plane
    ((2, 24, 2, 3), "nchw", (2, 3), [2, 24]),          # 6: c would join, but b varies along c alone
    ((2, 24, 4, 4), "nhwc", None, [2, 4, 4]),          # c and w are not consecutive dims
    ((1, 4, 5, 80), "nchw", None, [4, 5]),             # w is a long row already
])
def test_pointwise_rows_of_several_dims(shape, layout, row, grid):
    """``merge_rows``: the innermost dims every tensor stores alike are one loop
    over a ``memref.collapse_shape`` of each argument that holds them (not of the
    broadcast per-channel operand), as 8-lane vectors where it is long enough."""
    x, b = T(shape, layout=layout), T((shape[1], 1, 1))
    text = fn(f"%x: {x}, %y: {x}, %b: {b}", x, f"""
  %p = tsr.mul %x, %y : ({x}, {x}) -> {x}
  %s = tsr.add %p, %b : ({x}, {b}) -> {x}
  %r = tsr.sigmoid %s : ({x}) -> {x}""", "%r")
    k = the_kernel(check_lowering(text, row_lanes=8, merge_rows=True))
    collapses = [op for op in k.body.block.ops if isinstance(op, memref.CollapseShapeOp)]
    if row is None:
        assert not collapses
    else:
        assert len(collapses) == 3, "x, y and the output; not the broadcast b"
        groups = [[e.value.data for e in g.data] for g in collapses[0].reassociation.data]
        assert [g for g in groups if len(g) > 1] == [list(row)]
    assert grid_of(k) == grid


@pytest.mark.parametrize("shape, out_layout, tiled", [
    ((2, 24, 4, 4), "nhwc", True),       # a 4x4 plane is a 16-long dim of tiles
    ((2, 24, 4, 4), "nchw", True),       # and the other way
    ((2, 24, 3, 3), "nhwc", True),       # 9: one full tile and an edge
    ((1, 16, 8, 24), "nhwc", False),     # planes a tile wide already: tiled as they are
])
def test_transposes_of_small_planes_tile_the_merged_plane(shape, out_layout, tiled):
    """``merge_rows`` with transpose tiles (``tile_dims``): NCHW <-> NHWC of a plane
    narrower than a tile merges ``h, w`` in both tensors into one dim of the tiles."""
    in_layout = "nchw" if out_layout == "nhwc" else "nhwc"
    x, y = T(shape, layout=in_layout), T(shape, layout=out_layout)
    text = fn(f"%x: {x}", y, f"""
  %r = tsr.relayout %x : ({x}) -> {y}
  %s = tsr.sigmoid %r : ({y}) -> {y}""", "%s")
    k = the_kernel(check_lowering(text, transpose_tile=8, row_lanes=8, merge_rows=True))
    collapses = [op for op in k.body.block.ops if isinstance(op, memref.CollapseShapeOp)]
    assert len(collapses) == (2 if tiled else 0)
    assert "vector.shuffle" in op_names(k), "through transpose tiles"
