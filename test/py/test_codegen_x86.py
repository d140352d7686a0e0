"""The x86 LLVM emitter: kernel IR (docs/kernel-ir.md) compiled, run on random
tensors and compared with torch; vectorization and fast-math checked on the
optimized IR and assembly; contract violations give typed errors."""

from __future__ import annotations

import re

import pytest
import torch

from tessera.compiler.targets import codegen_target
from tessera.compiler.codegen import (
    CodegenError,
    UnknownTarget,
    assembly,
    kernel_signatures,
    llvm_ir,
    optimized_llvm_ir,
)
from tessera.runtime.signature import BufferSpec

from conftest import random_tensor
from kernel_testing import kernel, load, memref, parse_kernels, ulp_error, unary_kernel

GEN = torch.Generator().manual_seed(0)
# Objects for these feature sets run on this host; "+avx2,+fma" has no F16C or
# AVX512-BF16, so it exercises the integer f16/bf16 conversions.
RUNNABLE = [None, "+avx2,+fma"]


def _feature_ids(f):
    return "host" if f is None else f


def channels_last_kernel() -> str:
    """``out = exp(x) * 0.5 + b[c]`` on NCHW tensors stored NHWC, grid = (n, c, h) with an inner w loop."""
    t = memref([2, 8, 5, 6], "f32", [240, 1, 48, 8])
    return kernel("cl", [("x", t), ("b", "memref<8xf32>"), ("out", t)], [2], [2, 8, 5], f"""
    %half = arith.constant 0.5 : f32
    %c6 = arith.constant 6 : index
    %bv = memref.load %b[%i1] : memref<8xf32>
    scf.for %w = %c0 to %c6 step %c1 {{
      %v = memref.load %x[%i0, %i1, %i2, %w] : {t}
      %e = math.exp %v : f32
      %m = arith.mulf %e, %half : f32
      %s = arith.addf %m, %bv : f32
      memref.store %s, %out[%i0, %i1, %i2, %w] : {t}
    }}""")


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
def test_channels_last_elementwise(features):
    mod = load(channels_last_kernel(), features=features)
    x = random_tensor((2, 8, 5, 6), torch.float32, (240, 1, 48, 8), GEN)
    b = torch.randn(8, generator=GEN)
    out = torch.empty_strided((2, 8, 5, 6), (240, 1, 48, 8))
    mod.kernel("cl")(x, b, out)
    torch.testing.assert_close(out, torch.exp(x) * 0.5 + b.view(1, 8, 1, 1), rtol=1e-6, atol=1e-6)


def transfer_kernel() -> str:
    """Both outputs ``x.T``: a column read (strided lanes) written as a row (one
    vector store), and a row read (one vector load) written as a column."""
    t = memref((8, 8), "f32")
    m = lambda d: f"{{in_bounds = [true], permutation_map = affine_map<(d0, d1) -> (d{d})>}}"
    return kernel("transfers", [("x", t), ("o1", t), ("o2", t)], outputs=[1, 2], grid=[8], body=f"""
    %pad = arith.constant 0.0 : f32
    %col = vector.transfer_read %x[%c0, %i0], %pad {m(0)} : {t}, vector<8xf32>
    vector.transfer_write %col, %o1[%i0, %c0] {m(1)} : vector<8xf32>, {t}
    %row = vector.transfer_read %x[%i0, %c0], %pad {m(1)} : {t}, vector<8xf32>
    vector.transfer_write %row, %o2[%c0, %i0] {m(0)} : vector<8xf32>, {t}""")


def test_vector_transfers_along_either_dim():
    mod = load(transfer_kernel())
    x = torch.randn(8, 8, generator=GEN)
    o1, o2 = torch.empty(8, 8), torch.empty(8, 8)
    mod.kernel("transfers")(x, o1, o2)
    assert torch.equal(o1, x.T) and torch.equal(o2, x.T)
    ir = llvm_ir(parse_kernels(transfer_kernel()), codegen_target("x86", features="+avx2,+fma"))
    assert ir.count("store <8 x float>") == 1, "the stride-1 write is one vector store"
    assert ir.count("load <8 x float>") == 1, "the stride-1 read is one vector load"
    assert ir.count("store float") == 8 and ir.count("extractelement") == 8, "the strided write: a store per lane"


def row_select_kernel() -> str:
    """``where(x <= 0, fill, g)``, one row of 32 per grid point (a ReLU-BatchNorm backward of NCHW)."""
    t = memref((4, 16, 32, 32), "f32")
    return kernel("rows", [("g", memref((64, 1024), "f32")), ("x", t), ("fill", "memref<f32>"), ("out", t)],
                  outputs=[3], grid=[4, 16, 32], body=f"""
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    scf.for %w = %c0 to %c32 step %c1 {{
      %v = memref.load %x[%i0, %i1, %i2, %w] : {t}
      %le = arith.cmpf ole, %v, %zero : f32
      %f = memref.load %fill[] : memref<f32>
      %nc = arith.muli %i0, %c16 : index
      %r = arith.addi %nc, %i1 : index
      %hw = arith.muli %i2, %c32 : index
      %col = arith.addi %hw, %w : index
      %gv = memref.load %g[%r, %col] : memref<64x1024xf32>
      %y = arith.select %le, %f, %gv : f32
      memref.store %y, %out[%i0, %i1, %i2, %w] : {t}
    }}""")


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
def test_rows_with_inner_loops(features):
    """A grid point with a loop of its own: the walk over rows stays scalar
    (``cpu.scalar_loop``), the row vectorized; every element as torch computes it."""
    mod = load(row_select_kernel(), features=features)
    g, x = torch.randn(64, 1024, generator=GEN), torch.randn(4, 16, 32, 32, generator=GEN)
    x[1, 3, 5, 7] = float("nan")  # NaN <= 0 is false: g passes
    fill, out = torch.tensor(0.25), torch.empty(4, 16, 32, 32)
    mod.kernel("rows")(g, x, fill, out)
    want = torch.where(x <= 0, fill, g.view(4, 16, 32, 32))
    assert torch.equal(out, want)


def test_broadcast_reads():
    """A [1,C,1,1] operand read at index 0, and an expanded row (stride 0)."""
    x_t, s_t, r_t = memref([4, 3, 2, 5], "f32"), memref([1, 3, 1, 1], "f32"), memref([2, 5], "f32", [0, 1])
    text = kernel("bc", [("x", x_t), ("s", s_t), ("r", r_t), ("y", x_t)], [3], [4, 3, 2, 5], f"""
    %sv = memref.load %s[%c0, %i1, %c0, %c0] : {s_t}
    %rv = memref.load %r[%i2, %i3] : {r_t}
    %xv = memref.load %x[%i0, %i1, %i2, %i3] : {x_t}
    %a = arith.mulf %xv, %sv : f32
    %b = arith.subf %a, %rv : f32
    memref.store %b, %y[%i0, %i1, %i2, %i3] : {x_t}""")
    (sig,) = kernel_signatures(parse_kernels(text))
    assert sig.args[2] == BufferSpec((2, 5), (0, 1), "float32", False)
    x, s, row = (torch.randn(shape, generator=GEN) for shape in ((4, 3, 2, 5), (1, 3, 1, 1), (5,)))
    y = torch.empty(4, 3, 2, 5)
    load(text).kernel("bc")(x, s, row.expand(2, 5), y)
    torch.testing.assert_close(y, x * s - row, rtol=0, atol=1e-6)


def row_sum_kernel(reassoc: bool, rows: int = 64, cols: int = 1000) -> str:
    fm = " fastmath<reassoc>" if reassoc else ""
    x_t, y_t = memref([rows, cols], "f32"), memref([rows], "f32")
    return kernel("rowsum", [("x", x_t), ("y", y_t)], [1], [rows], f"""
    %zero = arith.constant 0.0 : f32
    %n = arith.constant {cols} : index
    %sum = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {{
      %v = memref.load %x[%i0, %j] : {x_t}
      %next = arith.addf %acc, %v{fm} : f32
      scf.yield %next : f32
    }}
    memref.store %sum, %y[%i0] : {y_t}""")


def test_reduction_with_iter_args():
    x = torch.randn(64, 1000, generator=GEN)
    y = torch.empty(64)
    load(row_sum_kernel(True)).kernel("rowsum")(x, y)
    torch.testing.assert_close(y, x.double().sum(1).float(), rtol=1e-5, atol=1e-4)
    strict = torch.empty(64)
    load(row_sum_kernel(False)).kernel("rowsum")(x, strict)
    sequential = torch.zeros(64)
    for j in range(1000):  # the strict kernel adds in program order, exactly
        sequential += x[:, j]
    assert torch.equal(strict, sequential)


def test_reassoc_maps_to_llvm_fast_math_and_vectorizes():
    target = codegen_target("x86", features="+avx2,+fma")
    fast = optimized_llvm_ir(parse_kernels(row_sum_kernel(True)), target)
    strict = optimized_llvm_ir(parse_kernels(row_sum_kernel(False)), target)
    assert "fadd reassoc float" in llvm_ir(parse_kernels(row_sum_kernel(True)), target)
    assert re.search(r"fadd reassoc <\d+ x float>", fast), "reassoc reduction was not vectorized"
    assert not re.search(r"fadd[a-z ]* <\d+ x float>", strict), "a strict fp reduction must stay in order"


def test_scf_if_with_results_and_without_else():
    t = memref([1000], "f32")
    text = kernel("sel", [("x", t), ("y", t), ("z", t)], [1, 2], [1000], f"""
    %zero = arith.constant 0.0 : f32
    %two = arith.constant 2.0 : f32
    %v = memref.load %x[%i0] : {t}
    %pos = arith.cmpf ogt, %v, %zero : f32
    %r = scf.if %pos -> (f32) {{
      %d = arith.mulf %v, %two : f32
      scf.yield %d : f32
    }} else {{
      %e = math.exp %v : f32
      scf.yield %e : f32
    }}
    memref.store %r, %y[%i0] : {t}
    memref.store %zero, %z[%i0] : {t}
    scf.if %pos {{
      memref.store %v, %z[%i0] : {t}
    }}""")
    x = torch.randn(1000, generator=GEN)
    y, z = torch.empty(1000), torch.empty(1000)
    load(text).kernel("sel")(x, y, z)
    torch.testing.assert_close(y, torch.where(x > 0, x * 2, torch.exp(x)), rtol=2e-7, atol=0)
    assert torch.equal(z, torch.relu(x))


def half_kernel() -> str:
    """f16 in, f32 compute, bf16 and f16 out (explicit extf/truncf, typed constants)."""
    h, b = memref([4, 257], "f16"), memref([4, 257], "bf16")
    return kernel("halves", [("x", h), ("bo", b), ("ho", h), ("bi", b), ("fo", memref([4, 257], "f32"))], [1, 2, 4],
                  [4, 257], f"""
    %k = arith.constant 1.5 : f32
    %one = arith.constant 1.0 : bf16
    %v = memref.load %x[%i0, %i1] : {h}
    %f = arith.extf %v : f16 to f32
    %m = arith.mulf %f, %k : f32
    %tb = arith.truncf %m : f32 to bf16
    memref.store %tb, %bo[%i0, %i1] : {b}
    %th = arith.truncf %m : f32 to f16
    memref.store %th, %ho[%i0, %i1] : {h}
    %w = memref.load %bi[%i0, %i1] : {b}
    %s = arith.addf %w, %one : bf16
    %sf = arith.extf %s : bf16 to f32
    memref.store %sf, %fo[%i0, %i1] : memref<4x257xf32>""")


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
def test_f16_bf16_loads_stores_and_rounding(features):
    x = (torch.randn(4, 257, generator=GEN) * 100).half()
    x[0, :8] = torch.tensor([float("inf"), float("-inf"), float("nan"), 6e-8, -6e-8, 65504.0, 1e-5, 0.0]).half()
    bi = (torch.randn(4, 257, generator=GEN) * 10).bfloat16()
    bo, ho, fo = torch.empty(4, 257, dtype=torch.bfloat16), torch.empty(4, 257, dtype=torch.float16), torch.empty(4, 257)
    load(half_kernel(), features=features).kernel("halves")(x, bo, ho, bi, fo)
    m = x.float() * 1.5
    torch.testing.assert_close(bo, m.bfloat16(), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(ho, m.half(), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(fo, (bi + 1).float(), rtol=0, atol=0)


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
def test_f32_to_16bit_conversion_edge_cases(features):
    """Round-to-nearest-even at halfway points, subnormals, overflow, NaN."""
    f, h, b = memref([64], "f32"), memref([64], "f16"), memref([64], "bf16")
    text = kernel("cvt", [("x", f), ("h", h), ("b", b), ("hb", f)], [1, 2, 3], [64], f"""
    %v = memref.load %x[%i0] : {f}
    %th = arith.truncf %v : f32 to f16
    memref.store %th, %h[%i0] : {h}
    %tb = arith.truncf %v : f32 to bf16
    memref.store %tb, %b[%i0] : {b}
    %back = arith.extf %th : f16 to f32
    memref.store %back, %hb[%i0] : {f}""")
    special = [1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, 65519.0, 65520.0, 1e9, -1e9, 2**-24, 2**-25,
               3 * 2**-26, 1e-30, -0.0, float("inf"), float("nan"), 3.4e38, 1.17e-38, 2**-14 * (1 - 2**-11)]
    x = torch.cat([torch.tensor(special), torch.randn(64 - len(special), generator=GEN) * 1e3])
    outs = torch.empty(64, dtype=torch.float16), torch.empty(64, dtype=torch.bfloat16), torch.empty(64)
    load(text, features=features).kernel("cvt")(x, *outs)
    for got, want in zip(outs, (x.half(), x.bfloat16(), x.half().float())):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        num = ~torch.isnan(want)
        assert torch.equal(torch.signbit(got[num]), torch.signbit(want[num]))


def _inputs(op: str, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 1e-30, -1e-30, 88.7, -87.5,
                             -100.0, 0.625, -0.625, 1.0, 3.9, -4.5, 20.0])
    if op == "math.log":
        body = torch.cat([torch.rand(n // 2, generator=g) * 4, torch.exp(torch.randn(n // 2, generator=g) * 30)])
        specials = torch.cat([specials, torch.tensor([1e-40, 1.17e-38, 3.4e38, -2.0])])
    elif op == "math.exp":
        body = torch.cat([torch.randn(n // 2, generator=g) * 5, torch.rand(n // 2, generator=g) * 200 - 105])
    else:
        body = torch.cat([torch.randn(n // 2, generator=g), torch.randn(n // 2, generator=g) * 4])
    return torch.cat([specials, body])


@pytest.mark.parametrize("op,fn", [("math.exp", torch.exp), ("math.log", torch.log), ("math.tanh", torch.tanh),
                                   ("math.erf", torch.erf)])
def test_transcendentals_within_2_ulp(op, fn):
    x = _inputs(op, 1 << 16)
    y = torch.empty_like(x)
    load(unary_kernel(op, x.numel())).kernel("unary")(x, y)
    ref = fn(x.double())
    assert torch.equal(torch.isnan(y), torch.isnan(fn(x))), "NaNs differ from torch"
    inf = torch.isinf(fn(x))
    assert torch.equal(y[inf], fn(x)[inf]), "infinities differ from torch"
    normal = (ref.abs() < 3.4e38) & (ref.abs() > 1.2e-38)
    worst = ulp_error(y[normal], ref[normal]).max().item()
    assert worst <= 2.0, f"{op}: {worst:.2f} ulp"
    tiny = (ref.abs() <= 1.2e-38) & ~torch.isnan(ref)  # subnormal results: absolute error of one subnormal step
    assert ((y[tiny].double() - ref[tiny]).abs() <= 2 * 2.0**-149).all()


def logistic_kernel(numerator: str, n: int) -> str:
    """``y = numerator / (1 + exp(-x))`` as ``lowering/scalar_ops.py`` spells SiLU
    (numerator ``%v``) and sigmoid (``%one``)."""
    t = memref([n], "f32")
    return kernel("logistic", [("x", t), ("y", t)], [1], [n], f"""
    %one = arith.constant 1.0 : f32
    %v = memref.load %x[%i0] : {t}
    %m = arith.negf %v : f32
    %e = math.exp %m : f32
    %d = arith.addf %one, %e : f32
    %r = arith.divf {numerator}, %d : f32
    memref.store %r, %y[%i0] : {t}""")


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
@pytest.mark.parametrize("numerator,fn", [("%v", torch.nn.functional.silu), ("%one", torch.sigmoid)],
                         ids=["silu", "sigmoid"])
def test_logistic_forms_are_one_expansion_within_2_ulp(features, numerator, fn):
    """SiLU and sigmoid as the kernel IR spells them lower to ``expand_math.silu`` /
    ``sigmoid`` (``lower_logistic``: no general ``exp`` left, whose 2^n is two
    factors from an ``fptosi``), within 3.5 ulp of float64 where torch's f32 result
    is normal (the worst is near x = -16.7, about 3 ulp: the exp's error, the sum's
    and the quotient's rounding; torch's own f32 silu and sigmoid reach 2.3 and 2.2
    there), with torch's NaNs, infinities and zeros, over 1e-40..3e38 of both signs,
    -100..100 densely and the edges of the clamp."""
    text = logistic_kernel(numerator, 1 << 16)
    ir_text = optimized_llvm_ir(parse_kernels(text), codegen_target("x86", features="+avx2,+fma"))
    assert "fptosi" not in ir_text, "the general exp was emitted"
    mag = torch.logspace(-40, 38.5, 1 << 14, dtype=torch.float64)
    edges = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 87.0, -87.0, 88.7, -88.7, 89.0, -89.0, -103.0, 1e-45]
    x = torch.cat([mag, -mag, torch.linspace(-100, 100, (1 << 16) - 2 * mag.numel() - len(edges), dtype=torch.float64),
                   torch.tensor(edges, dtype=torch.float64)]).float()
    y = torch.empty_like(x)
    load(text, features=features).kernel("logistic")(x, y)
    want32, want = fn(x), fn(x.double())
    assert torch.equal(y.isnan(), want32.isnan()) and torch.equal(y.isinf(), want32.isinf())
    assert torch.equal(y[want32 == 0], want32[want32 == 0])
    normal = want32.isfinite() & (want32.abs() >= torch.finfo(torch.float32).tiny)
    assert ulp_error(y[normal], want[normal]).max() <= 3.5
    tiny = want.isfinite() & ~normal
    assert (y.double() - want)[tiny].abs().max() < 1e-36


V8 = "vector<8xf32>"


def vector_rows_kernel(name: str, n: int, body: str) -> str:
    """A kernel over ``n`` f32 as 8-lane rows, as ``lowering/lane_values.py`` computes
    them: ``%v`` a row of ``x``, ``body`` computing ``%r``, written to ``y``."""
    t = memref([n], "f32")
    along = "{in_bounds = [true], permutation_map = affine_map<(d0) -> (d0)>}"
    return kernel(name, [("x", t), ("y", t)], [1], [n // 8], f"""
    %c8 = arith.constant 8 : index
    %pad = arith.constant 0.0 : f32
    %at = arith.muli %i0, %c8 : index
    %v = vector.transfer_read %x[%at], %pad {along} : {t}, {V8}{body}
    vector.transfer_write %r, %y[%at] {along} : {V8}, {t}""")


def vector_logistic_kernel(numerator: str, n: int) -> str:
    """:func:`logistic_kernel` on ``vector<8xf32>``: its ``1.0`` broadcast to every lane."""
    return vector_rows_kernel("logistic", n, f"""
    %one1 = arith.constant 1.0 : f32
    %one = vector.broadcast %one1 : f32 to {V8}
    %m = arith.negf %v : {V8}
    %e = math.exp %m : {V8}
    %d = arith.addf %one, %e : {V8}
    %r = arith.divf {numerator}, %d : {V8}""")


@pytest.mark.parametrize("numerator", ["%v", "%one"], ids=["silu", "sigmoid"])
def test_logistic_forms_of_vectors_are_the_same_expansion(numerator):
    """A broadcast ``1.0`` is the constant the logistic forms look for: vectors take
    the same expansion as scalars (not the general ``exp`` and a division), with
    the same results."""
    n = 1 << 12
    text = vector_logistic_kernel(numerator, n)
    assert "fptosi" not in optimized_llvm_ir(parse_kernels(text), codegen_target("x86", features="+avx2,+fma"))
    x = torch.cat([torch.randn(n - 8, generator=GEN) * 30, torch.tensor([0.0, -0.0, float("inf"), float("-inf"),
                                                                          float("nan"), 89.0, -89.0, 1e-45])])
    y, want = torch.empty_like(x), torch.empty_like(x)
    load(text).kernel("logistic")(x, y)
    load(logistic_kernel(numerator, n)).kernel("logistic")(x, want)
    torch.testing.assert_close(y, want, rtol=0, atol=0, equal_nan=True)


def vector_unary_kernel(op: str, n: int) -> str:
    """:func:`unary_kernel` on ``vector<8xf32>``."""
    return vector_rows_kernel("unary", n, f"""
    %r = {op} %v : {V8}""")


@pytest.mark.parametrize("op", ["math.log", "math.exp", "math.tanh", "math.erf", "math.sqrt", "math.rsqrt",
                                "math.floor", "math.roundeven", "math.absf"])
def test_math_of_vectors_is_the_scalar_expansion(op):
    """Each ``math`` op ``LaneValues`` emits on vectors lowers on ``vector<8xf32>`` (``log``
    was scalar only: a pointwise row of ``log`` failed to build) to the scalar
    expansion lane by lane: the same bits, NaN, infinities, zeros and subnormals included."""
    n = 1 << 12
    x = torch.cat([torch.randn(n - 16, generator=GEN) * 30, torch.tensor([
        0.0, -0.0, float("inf"), float("-inf"), float("nan"), 89.0, -89.0, 1e-45, -1e-45, 1e-39, 2.5, -2.5, 0.5,
        1.0, 3e38, -3e38])])
    y, want = torch.empty_like(x), torch.empty_like(x)
    load(vector_unary_kernel(op, n)).kernel("unary")(x, y)
    load(unary_kernel(op, n)).kernel("unary")(x, want)
    torch.testing.assert_close(y, want, rtol=0, atol=0, equal_nan=True)


def _f32_bits(lo: float, hi: float, step: int = 1) -> torch.Tensor:
    """Every ``step``-th f32 from ``lo`` to ``hi`` (both >= 0), in order."""
    a, b = (torch.tensor([v], dtype=torch.float32).view(torch.int32).item() for v in (lo, hi))
    return torch.arange(a, b + 1, step, dtype=torch.int32).view(torch.float32)


@pytest.mark.parametrize("features", RUNNABLE, ids=_feature_ids)
def test_erf_dense_sweep(features):
    """erf over every 509th f32 in [0, 4.5], all f32 around the switch at |x| = 1 and the clamp at 3.92,
    and their negatives, against erf in double: <= 1e-7 absolute, <= 1.5 ulp (an exhaustive run over
    all 1.09e9 f32 in [0, 4.5] measured 8.45e-8 and 1.42 ulp, at x = 1.022), exactly odd, and 1 where
    the correctly rounded erf is 1."""
    pos = torch.cat([_f32_bits(0.0, 4.5, 509), _f32_bits(0.99, 1.06), _f32_bits(3.9, 3.94), _f32_bits(0.0, 1e-37, 4099)])
    x = torch.cat([pos, -pos])
    y = torch.empty_like(x)
    load(unary_kernel("math.erf", x.numel()), features=features).kernel("unary")(x, y)
    ref = torch.erf(x.double())
    err = (y.double() - ref).abs()
    assert err.max().item() <= 1e-7, f"max abs error {err.max().item():.3g} at x = {x[err.argmax()].item()!r}"
    normal = ref.abs() > 1.2e-38
    worst = ulp_error(y[normal], ref[normal])
    assert worst.max().item() <= 1.5, f"{worst.max().item():.2f} ulp at x = {x[normal][worst.argmax()].item()!r}"
    assert (err[~normal] <= 2.0**-149).all(), "subnormal results more than one step off"
    n = pos.numel()
    assert torch.equal(y[n:], -y[:n]) and torch.equal(torch.signbit(y[n:]), ~torch.signbit(y[:n])), "erf is not odd"
    ones = ref.float().abs() == 1.0
    assert ones.any() and torch.equal(y[ones], ref[ones].float())


def test_erf_special_values():
    x = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3.92, -3.92, 1e-45, -1e-45])
    y = torch.empty_like(x)
    load(unary_kernel("math.erf", x.numel())).kernel("unary")(x, y)
    assert torch.equal(y[:4], torch.tensor([0.0, -0.0, 1.0, -1.0])) and torch.equal(torch.signbit(y[:2]), torch.tensor([False, True]))
    assert torch.isnan(y[4])
    assert torch.equal(y[5:9], torch.tensor([1.0, -1.0, 1.0, -1.0]))
    assert torch.equal(y[9:], x[9:])  # erf(x) = 1.128 x rounds to x at the smallest subnormal


def test_math_expansions_are_inline_and_vectorized():
    """No libm call in an f32 exp/tanh/erf/log loop; the loop is widened to ymm."""
    target = codegen_target("x86", features="+avx2,+fma")
    for op in ("math.exp", "math.log", "math.tanh", "math.erf"):
        asm = assembly(parse_kernels(unary_kernel(op, 4096)), target)
        assert not re.search(r"\bcall", asm), f"{op} calls out: {re.findall(r'call.*', asm)[:3]}"
        assert re.search(r"v\w+ps\s.*%ymm", asm), f"{op} loop is not vectorized"


def test_powf_sqrt_rsqrt_fma_abs():
    t = memref([2048], "f32")
    text = kernel("pw", [("x", t), ("y", t), ("a", t), ("b", t), ("c", t), ("d", t)], [2, 3, 4, 5], [2048], f"""
    %two = arith.constant 2.0 : f32
    %v = memref.load %x[%i0] : {t}
    %e = memref.load %y[%i0] : {t}
    %ab = math.absf %v : f32
    %p = math.powf %ab, %e : f32
    memref.store %p, %a[%i0] : {t}
    %sq = math.powf %v, %two : f32
    memref.store %sq, %b[%i0] : {t}
    %r = math.rsqrt %ab : f32
    memref.store %r, %c[%i0] : {t}
    %f = math.fma %v, %e, %r : f32
    %s = math.sqrt %f : f32
    memref.store %s, %d[%i0] : {t}""")
    x = torch.rand(2048, generator=GEN) * 4 + 0.1
    x[::2] *= -1
    e = torch.randn(2048, generator=GEN) * 3
    outs = [torch.empty(2048) for _ in range(4)]
    load(text).kernel("pw")(x, e, *outs)
    torch.testing.assert_close(outs[0], torch.pow(x.abs(), e), rtol=2e-6, atol=0)
    assert torch.equal(outs[1], x * x)
    torch.testing.assert_close(outs[2], torch.rsqrt(x.abs()), rtol=2e-7, atol=0)
    torch.testing.assert_close(outs[3], torch.sqrt(torch.addcmul(outs[2], x, e)), rtol=2e-6, atol=0, equal_nan=True)


def test_powf_negative_base_sign_rules():
    t = memref([8], "f32")
    text = kernel("pw", [("x", t), ("y", t), ("z", t)], [2], [8], f"""
    %v = memref.load %x[%i0] : {t}
    %e = memref.load %y[%i0] : {t}
    %p = math.powf %v, %e : f32
    memref.store %p, %z[%i0] : {t}""")
    x = torch.tensor([-2.0, -2.0, -2.0, 0.0, 0.0, float("nan"), 1.0, -8.0])
    e = torch.tensor([3.0, 2.0, 0.5, 2.0, -1.0, 0.0, float("nan"), 1e30])
    z = torch.empty(8)
    load(text).kernel("pw")(x, e, z)
    torch.testing.assert_close(z, torch.pow(x, e), rtol=1e-6, atol=0, equal_nan=True)


def test_int8_int32_arithmetic():
    i8, i32, u8 = memref([3, 100], "i8"), memref([3, 100], "i32"), memref([3, 100], "i8")
    text = kernel("ints", [("a", i8), ("b", i32), ("u", u8), ("o32", i32), ("o8", i8), ("fd", i32)], [3, 4, 5],
                  [3, 100], f"""
    %k = arith.constant 7 : i32
    %m = arith.constant -3 : i32
    %av = memref.load %a[%i0, %i1] : {i8}
    %bv = memref.load %b[%i0, %i1] : {i32}
    %uv = memref.load %u[%i0, %i1] : {u8}
    %aw = arith.extsi %av : i8 to i32
    %uw = arith.extui %uv : i8 to i32
    %p = arith.muli %aw, %bv : i32
    %q = arith.addi %p, %uw : i32
    %mx = arith.maxsi %q, %m : i32
    memref.store %mx, %o32[%i0, %i1] : {i32}
    %t = arith.trunci %q : i32 to i8
    memref.store %t, %o8[%i0, %i1] : {i8}
    %f = arith.floordivsi %bv, %k : i32
    %r = arith.remsi %f, %k : i32
    memref.store %r, %fd[%i0, %i1] : {i32}""", arg_attrs={2: "tsr.dtype = ui8"})
    (sig,) = kernel_signatures(parse_kernels(text))
    assert [a.dtype for a in sig.args] == ["int8", "int32", "uint8", "int32", "int8", "int32"]
    a = random_tensor((3, 100), torch.int8, gen=GEN)
    b = random_tensor((3, 100), torch.int32, gen=GEN)
    u = random_tensor((3, 100), torch.uint8, gen=GEN)
    o32, o8, fd = torch.empty(3, 100, dtype=torch.int32), torch.empty(3, 100, dtype=torch.int8), torch.empty(3, 100, dtype=torch.int32)
    load(text).kernel("ints")(a, b, u, o32, o8, fd)
    q = a.int() * b + u.int()
    assert torch.equal(o32, torch.maximum(q, torch.tensor(-3, dtype=torch.int32)))
    assert torch.equal(o8, q.to(torch.int8))
    assert torch.equal(fd, torch.fmod(torch.div(b, 7, rounding_mode="floor"), 7))


def test_bool_and_index_cast():
    f, bl, i64 = memref([50], "f32"), memref([50], "i1"), memref([50], "i64")
    text = kernel("bools", [("x", f), ("m", bl), ("o", f), ("ix", i64)], [2, 3], [50], f"""
    %zero = arith.constant 0.0 : f32
    %v = memref.load %x[%i0] : {f}
    %keep = memref.load %m[%i0] : {bl}
    %r = arith.select %keep, %v, %zero : f32
    memref.store %r, %o[%i0] : {f}
    %n = arith.index_cast %i0 : index to i64
    memref.store %n, %ix[%i0] : {i64}""")
    x, m = torch.randn(50, generator=GEN), torch.rand(50, generator=GEN) > 0.5
    o, ix = torch.empty(50), torch.empty(50, dtype=torch.int64)
    load(text).kernel("bools")(x, m, o, ix)
    assert torch.equal(o, torch.where(m, x, 0.0))
    assert torch.equal(ix, torch.arange(50))


def test_alloca_scratch():
    """A per-grid-point scratch buffer: y[i] = x[i, 0..3] written to scratch in reverse, then read in order."""
    x_t, s_t = memref([100, 4], "f32"), memref([4], "f32")
    text = kernel("scratch", [("x", x_t), ("y", x_t)], [1], [100], f"""
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %buf = memref.alloca() : {s_t}
    scf.for %j = %c0 to %c4 step %c1 {{
      %v = memref.load %x[%i0, %j] : {x_t}
      %r = arith.subi %c3, %j : index
      memref.store %v, %buf[%r] : {s_t}
    }}
    scf.for %j = %c0 to %c4 step %c1 {{
      %v = memref.load %buf[%j] : {s_t}
      memref.store %v, %y[%i0, %j] : {x_t}
    }}""")
    x, y = torch.randn(100, 4, generator=GEN), torch.empty(100, 4)
    load(text).kernel("scratch")(x, y)
    assert torch.equal(y, x.flip(1))


def test_f64_math_calls_libm():
    t = memref([300], "f64")
    text = kernel("f64", [("x", t), ("y", t)], [1], [300], f"""
    %v = memref.load %x[%i0] : {t}
    %e = math.tanh %v : f64
    %l = math.erf %e : f64
    %p = math.powf %v, %l : f64
    %s = arith.addf %p, %e : f64
    memref.store %s, %y[%i0] : {t}""")
    x = torch.rand(300, generator=GEN, dtype=torch.float64) * 3 + 0.1
    y = torch.empty_like(x)
    load(text).kernel("f64")(x, y)
    e = torch.tanh(x)
    torch.testing.assert_close(y, torch.pow(x, torch.erf(e)) + e, rtol=1e-14, atol=0)


def test_x86_abi_and_avx512_assembly():
    module = parse_kernels(unary_kernel("math.exp", 4096))
    ir = llvm_ir(module, codegen_target("x86", features="+avx2,+fma"))
    assert re.search(r'define void @"?unary"?\(ptr noalias %"?arg0"?, ptr noalias %"?arg1"?, i64 %"?lo"?, i64 %"?hi"?\)', ir)
    avx512 = assembly(module, codegen_target("x86", features="+avx512f"))
    assert "zmm" in avx512
    avx2 = assembly(module, codegen_target("x86", features="+avx2,+fma"))
    assert "ymm" in avx2 and "zmm" not in avx2


def test_kernel_signature_extraction():
    text = channels_last_kernel()
    (sig,) = kernel_signatures(parse_kernels(text))
    assert sig.name == "cl" and sig.grid == (2, 8, 5)
    assert sig.args[0] == BufferSpec((2, 8, 5, 6), (240, 1, 48, 8), "float32", False)
    assert sig.args[1] == BufferSpec((8,), (1,), "float32", False)
    assert sig.outputs == (2,)


def test_contract_violations_are_typed_errors():
    t = memref([4], "f32")
    body = f"""
    %v = memref.load %x[%i0] : {t}
    memref.store %v, %y[%i0] : {t}"""
    no_outputs = kernel("k", [("x", t), ("y", t)], [1], [4], body).replace(", tsr.outputs = array<i64: 1>", "")
    with pytest.raises(CodegenError, match="tsr.outputs"):
        kernel_signatures(parse_kernels(no_outputs))
    with pytest.raises(CodegenError, match="does not list"):
        kernel_signatures(parse_kernels(kernel("k", [("x", t), ("y", t)], [0], [4], body)))
    sin = kernel("k", [("x", t), ("y", t)], [1], [4], f"""
    %v = memref.load %x[%i0] : {t}
    %s = math.sin %v : f32
    memref.store %s, %y[%i0] : {t}""")
    with pytest.raises(CodegenError, match="'math.sin' is not supported") as err:
        llvm_ir(parse_kernels(sin), codegen_target("x86", features="+avx2"))
    assert err.value.location is not None and err.value.location.line > 0
    with pytest.raises(CodegenError, match="no function with the 'tsr.kernel'"):
        kernel_signatures(parse_kernels(""))
    with pytest.raises(UnknownTarget):
        codegen_target("riscv")
    with pytest.raises(UnknownTarget):
        codegen_target("x86", features="avx2")
