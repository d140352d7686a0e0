"""The reference interpreter on hand-written ``tsr`` modules, against the
same computation written directly in torch."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.compiler.interpreter import InterpreterError, interpret
from tessera.compiler.ir_io import parse_module, verify_module
from tessera.dialects.tsr.layout import NAMED_LAYOUTS, strides_for

from conftest import assert_close
from pass_testing import tensor_type as ty

aten = torch.ops.aten



def module(args: Sequence[tuple[str, str]], body: str, results: Sequence[tuple[str, str]]):
    """``func.func @forward`` from ``(name, type)`` arguments, body lines and returned values."""
    params = ", ".join(f"%{n}: {t}" for n, t in args)
    rets = ", ".join(t for _, t in results)
    text = (
        f"func.func @forward({params}) -> ({rets}) {{\n{body}\n"
        f"  func.return {', '.join('%' + n for n, _ in results)} : {rets}\n}}\n"
    )
    m = parse_module(text, "test.mlir")
    verify_module(m)
    return m


def assert_layout(t: torch.Tensor, layout: Sequence[int] | str) -> None:
    perm = NAMED_LAYOUTS[layout] if isinstance(layout, str) else tuple(layout)
    want = strides_for(tuple(t.shape), perm)
    assert all(s == w for s, w, n in zip(t.stride(), want, t.shape) if n > 1), (t.stride(), want)


def randn(*shape, seed=0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# -- data movement -----------------------------------------------------------------------
def test_pad_with_negative_crop():
    x = randn(1, 2, 6, 6)
    tin, tout = ty([1, 2, 6, 6], layout="nhwc"), ty([1, 2, 7, 5], layout="nhwc")
    m = module(
        [("x", tin)],
        "  %v = tsr.constant 5.000000e-01 : f32\n"
        f"  %p = tsr.pad %x, %v {{low = array<i64: 0, 0, -1, 1>, high = array<i64: 0, 0, 2, -2>}} : ({tin}, f32) -> {tout}",
        [("p", tout)],
    )
    (got,) = interpret(m, x)
    expected = F.pad(x, (1, -2, -1, 2), value=0.5)
    assert got.shape == (1, 2, 7, 5)
    assert_close(got, expected, "pad")
    assert (got[:, :, -2:, :] == 0.5).all() and (got[:, :, :, 0] == 0.5).all()
    assert_layout(got, "nhwc")


def test_causal_time_pad():
    x = randn(1, 3, 2, 4, 4)
    tin, tout = ty([1, 3, 2, 4, 4], layout="ndhwc"), ty([1, 3, 4, 6, 6], layout="ndhwc")
    m = module(
        [("x", tin)],
        "  %z = tsr.constant 0.000000e+00 : f64\n"
        f"  %p = tsr.pad %x, %z {{low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}} : ({tin}, f64) -> {tout}",
        [("p", tout)],
    )
    (got,) = interpret(m, x)
    assert_close(got, F.pad(x, (1, 1, 1, 1, 2, 0)), "causal pad")
    assert_layout(got, "ndhwc")


def test_relayout_nchw_to_nhwc_keeps_values():
    x = randn(2, 3, 4, 5)
    tin, tout = ty([2, 3, 4, 5], layout="nchw"), ty([2, 3, 4, 5], layout="nhwc")
    m = module([("x", tin)], f"  %r = tsr.relayout %x : ({tin}) -> {tout}", [("r", tout)])
    (got,) = interpret(m, x)
    assert torch.equal(got, x)
    assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()
    assert got.stride() == x.contiguous(memory_format=torch.channels_last).stride()


def test_input_given_in_another_layout_is_stored_as_typed():
    """An NCHW input handed to an nhwc argument is relaid, not reinterpreted."""
    x = randn(1, 4, 3, 3)
    t = ty([1, 4, 3, 3], layout="nhwc")
    m = module([("x", t)], f"  %y = tsr.neg %x : ({t}) -> {t}", [("y", t)])
    (got,) = interpret(m, x)
    assert torch.equal(got, -x)
    assert got.is_contiguous(memory_format=torch.channels_last)


def test_permute_is_logical():
    x = randn(2, 3, 4)
    tin, tout = ty([2, 3, 4]), ty([4, 2, 3], layout=[1, 2, 0])
    m = module([("x", tin)], f"  %p = tsr.permute %x {{dims = array<i64: 2, 0, 1>}} : ({tin}) -> {tout}", [("p", tout)])
    (got,) = interpret(m, x)
    assert torch.equal(got, x.permute(2, 0, 1))
    assert_layout(got, [1, 2, 0])


def test_slice_with_step():
    x = randn(1, 8, 9)
    tin, tout = ty([1, 8, 9]), ty([1, 8, 3])
    m = module(
        [("x", tin)],
        f"  %s = tsr.slice %x {{dim = 2 : i64, start = 1 : i64, end = 8 : i64, step = 3 : i64}} : ({tin}) -> {tout}",
        [("s", tout)],
    )
    (got,) = interpret(m, x)
    assert torch.equal(got, x[:, :, 1:8:3])
    assert got.is_contiguous()


def test_concat_of_mixed_layouts():
    a, b = randn(1, 2, 3, 3, seed=1), randn(1, 5, 3, 3, seed=2)
    ta, tb, tout = ty([1, 2, 3, 3], layout="nchw"), ty([1, 5, 3, 3], layout="nhwc"), ty([1, 7, 3, 3], layout="nhwc")
    m = module(
        [("a", ta), ("b", tb)],
        f"  %c = tsr.concat %a, %b {{dim = 1 : i64}} : ({ta}, {tb}) -> {tout}",
        [("c", tout)],
    )
    (got,) = interpret(m, a, b)
    assert torch.equal(got, torch.cat([a, b], dim=1))
    assert_layout(got, "nhwc")


def test_reshape_and_expand():
    x = randn(3, 1, seed=4)
    tx, tr, te = ty([3, 1]), ty([1, 3]), ty([2, 4, 3], layout=[2, 0, 1])
    m = module(
        [("x", tx)],
        f"  %r = tsr.reshape %x : ({tx}) -> {tr}\n  %e = tsr.expand %r : ({tr}) -> {te}",
        [("e", te)],
    )
    (got,) = interpret(m, x)
    assert torch.equal(got, x.reshape(1, 3).expand(2, 4, 3))
    assert_layout(got, [2, 0, 1])


# -- elementwise ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pred", "fn"),
    [("lt", torch.lt), ("le", torch.le), ("gt", torch.gt), ("ge", torch.ge), ("eq", torch.eq), ("ne", torch.ne)],
)
def test_cmp_with_scalar_on_the_left(pred, fn):
    x = torch.tensor([-1.0, 0.0, 0.5, 0.75, 2.0, 0.5])
    t, tb = ty([6]), ty([6], "i1")
    m = module(
        [("x", t)],
        "  %c = tsr.constant 5.000000e-01 : f32\n"
        f"  %m = tsr.cmp {pred}, %c, %x : (f32, {t}) -> {tb}\n"
        f"  %n = tsr.cmp {pred}, %x, %c : ({t}, f32) -> {tb}",
        [("m", tb), ("n", tb)],
    )
    left, right = interpret(m, x)
    assert left.dtype == torch.bool
    assert torch.equal(left, fn(torch.tensor(0.5), x)), (pred, left)
    assert torch.equal(right, fn(x, 0.5)), (pred, right)


def test_where_with_scalar_operands():
    x = randn(4, 5)
    t, tb = ty([4, 5]), ty([4, 5], "i1")
    m = module(
        [("x", t)],
        "  %zero = tsr.constant 0.000000e+00 : f32\n"
        "  %big = tsr.constant 3.000000e+00 : f64\n"
        f"  %m = tsr.cmp gt, %x, %zero : ({t}, f32) -> {tb}\n"
        f"  %a = tsr.where %m, %x, %big : ({tb}, {t}, f64) -> {t}\n"
        f"  %b = tsr.where %m, %big, %x : ({tb}, f64, {t}) -> {t}",
        [("a", t), ("b", t)],
    )
    a, b = interpret(m, x)
    assert_close(a, torch.where(x > 0, x, torch.tensor(3.0)), "where(m, x, 3)")
    assert_close(b, torch.where(x > 0, torch.tensor(3.0), x), "where(m, 3, x)")
    assert a.dtype == torch.float32


def test_broadcasting_binary_and_scalar_types():
    x, bias = randn(2, 3, 4), randn(4, seed=1)
    t, tb = ty([2, 3, 4], layout=[2, 1, 0]), ty([4])
    m = module(
        [("x", t), ("b", tb)],
        "  %two = tsr.constant 2 : i64\n"
        f"  %s = tsr.add %x, %b : ({t}, {tb}) -> {t}\n"
        f"  %p = tsr.pow %s, %two : ({t}, i64) -> {t}\n"
        f"  %q = tsr.maximum %p, %x : ({t}, {t}) -> {t}\n"
        f"  %g = tsr.gelu %q {{approximate = \"tanh\"}} : ({t}) -> {t}",
        [("g", t)],
    )
    (got,) = interpret(m, x, bias)
    expected = F.gelu(torch.maximum((x + bias) ** 2, x), approximate="tanh")
    assert_close(got, expected, "chain")
    assert_layout(got, [2, 1, 0])


def test_convert_rounds_to_integer_type():
    x = torch.tensor([[1.7, -2.2], [100.9, 3.0]])
    t, ti = ty([2, 2]), ty([2, 2], "i32", layout=[1, 0])
    m = module([("x", t)], f"  %c = tsr.convert %x : ({t}) -> {ti}", [("c", ti)])
    (got,) = interpret(m, x)
    assert got.dtype == torch.int32 and torch.equal(got, x.to(torch.int32))
    assert got.stride() == (1, 2)


def test_dense_constants():
    t0, t2 = ty([], "f32", layout=[]), ty([2, 3], layout=[1, 0])
    m = module(
        [],
        f"  %a = tsr.constant dense<2.500000e+00> : {t0}\n"
        f"  %b = tsr.constant dense<1.000000e+00> : {t2}\n"
        f"  %c = tsr.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : {t2}",
        [("a", t0), ("b", t2), ("c", t2)],
    )
    a, b, c = interpret(m)
    assert a.shape == () and a.item() == 2.5
    assert torch.equal(b, torch.ones(2, 3))
    assert torch.equal(c, torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert c.stride() == (1, 2)


# -- reductions, contractions, upsampling ------------------------------------------------
@pytest.mark.parametrize("correction", [0.0, 1.0, 2.0])
def test_var_with_correction(correction):
    x = randn(2, 4, 6)
    t, tr = ty([2, 4, 6]), ty([2, 1, 1])
    m = module(
        [("x", t)],
        f"  %v = tsr.var %x {{dims = array<i64: 1, 2>, keepdim = true, correction = {correction} : f64}} : ({t}) -> {tr}",
        [("v", tr)],
    )
    (got,) = interpret(m, x)
    assert_close(got, torch.var(x, dim=(1, 2), correction=correction, keepdim=True), f"var c={correction}")


def test_reductions_over_all_and_negative_dims():
    x = randn(3, 4)
    t = ty([3, 4])
    m = module(
        [("x", t)],
        f"  %s = tsr.sum %x {{dims = array<i64>, keepdim = false}} : ({t}) -> {ty([])}\n"
        f"  %a = tsr.amax %x {{dims = array<i64: -1>, keepdim = false}} : ({t}) -> {ty([3])}\n"
        f"  %n = tsr.amin %x {{dims = array<i64: 0>, keepdim = true}} : ({t}) -> {ty([1, 4])}\n"
        f"  %e = tsr.mean %x {{dims = array<i64: 1>, keepdim = true}} : ({t}) -> {ty([3, 1])}",
        [("s", ty([])), ("a", ty([3])), ("n", ty([1, 4])), ("e", ty([3, 1]))],
    )
    s, a, n, e = interpret(m, x)
    assert_close(s, x.sum(), "sum")
    assert_close(a, x.amax(-1), "amax")
    assert_close(n, x.amin(0, keepdim=True), "amin")
    assert_close(e, x.mean(1, keepdim=True), "mean")


def test_upsample_nearest_uses_scales():
    """With ``scales`` the source index is floor(dst / scale), as ATen computes
    it for ``F.interpolate(scale_factor=...)``; it differs from the size ratio."""
    x = randn(1, 2, 5, 5)
    tin, tout = ty([1, 2, 5, 5]), ty([1, 2, 8, 8], layout="nhwc")
    m = module(
        [("x", tin)],
        f"  %s = tsr.upsample %x {{mode = \"nearest\", scales = array<f64: 1.7, 1.7>}} : ({tin}) -> {tout}\n"
        f"  %n = tsr.upsample %x {{mode = \"nearest\"}} : ({tin}) -> {tout}",
        [("s", tout), ("n", tout)],
    )
    scaled, sized = interpret(m, x)
    assert_close(scaled, F.interpolate(x, scale_factor=1.7, mode="nearest"), "nearest with scales")
    assert_close(sized, F.interpolate(x, size=(8, 8), mode="nearest"), "nearest by size")
    assert not torch.equal(scaled, sized)
    assert_layout(scaled, "nhwc")


def test_upsample_nearest_3d_and_bilinear():
    x3, x2 = randn(1, 2, 2, 3, 3), randn(1, 2, 4, 4, seed=5)
    t3, t3o = ty([1, 2, 2, 3, 3]), ty([1, 2, 4, 6, 6], layout="ndhwc")
    t2, t2o = ty([1, 2, 4, 4]), ty([1, 2, 8, 8])
    m = module(
        [("a", t3), ("b", t2)],
        f"  %u = tsr.upsample %a {{mode = \"nearest\", scales = array<f64: 2.0, 2.0, 2.0>}} : ({t3}) -> {t3o}\n"
        f"  %v = tsr.upsample %b {{mode = \"bilinear\", align_corners = true}} : ({t2}) -> {t2o}",
        [("u", t3o), ("v", t2o)],
    )
    u, v = interpret(m, x3, x2)
    assert_close(u, F.interpolate(x3, scale_factor=2.0, mode="nearest"), "nearest 3d")
    assert_layout(u, "ndhwc")
    assert_close(v, F.interpolate(x2, size=(8, 8), mode="bilinear", align_corners=True), "bilinear")


def test_conv_with_layouts():
    x, w, b = randn(1, 4, 6, 6), randn(8, 2, 3, 3, seed=1), randn(8, seed=2)
    tx, tw, tb, ty_ = ty([1, 4, 6, 6], layout="nhwc"), ty([8, 2, 3, 3], layout="nhwc"), ty([8]), ty([1, 8, 3, 3], layout="nhwc")
    m = module(
        [("x", tx), ("w", tw), ("b", tb)],
        f"  %y = tsr.conv %x, %w, %b {{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, "
        f"dilation = array<i64: 1, 1>, groups = 2 : i64}} : ({tx}, {tw}, {tb}) -> {ty_}",
        [("y", ty_)],
    )
    (got,) = interpret(m, x, w, b)
    assert_close(got, F.conv2d(x, w, b, stride=2, padding=1, groups=2), "grouped strided conv")
    assert_layout(got, "nhwc")


def test_int_mm_is_exact():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(0, 256, (32, 64), dtype=torch.uint8, generator=g)
    b = torch.randint(-128, 128, (64, 16), dtype=torch.int8, generator=g)
    ta, tb, tc = ty([32, 64], "ui8"), ty([64, 16], "i8", layout=[1, 0]), ty([32, 16], "i32")
    m = module([("a", ta), ("b", tb)], f"  %c = tsr.int_mm %a, %b : ({ta}, {tb}) -> {tc}", [("c", tc)])
    (got,) = interpret(m, a, b)
    assert got.dtype == torch.int32
    assert torch.equal(got, (a.long() @ b.long()).to(torch.int32))


def test_matmul_addmm_bmm():
    a, b, bias = randn(3, 5), randn(5, 2, seed=1), randn(2, seed=2)
    ba, bb = randn(2, 3, 5, seed=3), randn(2, 5, 4, seed=4)
    ta, tb, tbias, tc = ty([3, 5]), ty([5, 2], layout=[1, 0]), ty([2]), ty([3, 2])
    tba, tbb, tbc = ty([2, 3, 5]), ty([2, 5, 4]), ty([2, 3, 4])
    m = module(
        [("a", ta), ("b", tb), ("bias", tbias), ("x", tba), ("y", tbb)],
        f"  %mm = tsr.matmul %a, %b : ({ta}, {tb}) -> {tc}\n"
        f"  %am = tsr.addmm %bias, %a, %b : ({tbias}, {ta}, {tb}) -> {tc}\n"
        f"  %bm = tsr.bmm %x, %y : ({tba}, {tbb}) -> {tbc}",
        [("mm", tc), ("am", tc), ("bm", tbc)],
    )
    mm, am, bm = interpret(m, a, b, bias, ba, bb)
    assert_close(mm, a @ b, "matmul")
    assert_close(am, torch.addmm(bias, a, b), "addmm")
    assert_close(bm, torch.bmm(ba, bb), "bmm")


# -- ATen calls -------------------------------------------------------------------------
def test_aten_call_split_has_several_results():
    x = randn(7, 3)
    t = ty([7, 3])
    outs = [ty([3, 3]), ty([3, 3]), ty([1, 3])]
    m = module(
        [("x", t)],
        f'  %a, %b, %c = tsr.aten_call "aten.split.Tensor"(%x) {{args = [#tsr.operand<0>, 3 : i64, 0 : i64]}} '
        f": ({t}) -> ({', '.join(outs)})",
        [("a", outs[0]), ("b", outs[1]), ("c", outs[2])],
    )
    got = interpret(m, x)
    for g, e in zip(got, torch.split(x, 3, 0), strict=True):
        assert torch.equal(g, e)


def test_aten_call_convolution_backward_with_none_result():
    g, x, w = randn(1, 4, 5, 5), randn(1, 2, 5, 5, seed=1), randn(4, 2, 3, 3, seed=2)
    tg, tx, tw = ty([1, 4, 5, 5]), ty([1, 2, 5, 5], layout="nhwc"), ty([4, 2, 3, 3])
    m = module(
        [("g", tg), ("x", tx), ("w", tw)],
        '  %gi, %gw, %gb = tsr.aten_call "aten.convolution_backward.default"(%g, %x, %w) '
        "{args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.operand<2>, [4 : i64], [1 : i64, 1 : i64], "
        "[1 : i64, 1 : i64], [1 : i64, 1 : i64], false, [0 : i64, 0 : i64], 1 : i64, [true, true, false]]} "
        f": ({tg}, {tx}, {tw}) -> ({tx}, {tw}, none)",
        [("gi", tx), ("gw", tw)],
    )
    gi, gw = interpret(m, g, x, w)
    ei, ew, eb = aten.convolution_backward(g, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
    assert eb is None
    assert_close(gi, ei, "grad input")
    assert_close(gw, ew, "grad weight")
    assert_layout(gi, "nhwc")


def test_aten_call_with_kwargs_dtype_and_enum():
    x = randn(2, 3, 4, 4)
    t, th = ty([2, 3, 4, 4]), ty([2, 3, 4, 4], "f16", layout="nhwc")
    m = module(
        [("x", t)],
        '  %y = tsr.aten_call "aten._to_copy.default"(%x) {args = [#tsr.operand<0>], '
        'kwargs = {dtype = f16, memory_format = #tsr.torch<"channels_last">}} '
        f": ({t}) -> ({th})",
        [("y", th)],
    )
    (got,) = interpret(m, x)
    assert got.dtype == torch.float16
    assert torch.equal(got, x.to(torch.float16))
    assert got.is_contiguous(memory_format=torch.channels_last)


def test_interpreter_rejects_wrong_inputs():
    t = ty([2, 2])
    m = module([("x", t)], f"  %y = tsr.neg %x : ({t}) -> {t}", [("y", t)])
    with pytest.raises(InterpreterError, match="takes 1 inputs, got 0"):
        interpret(m)
    with pytest.raises(InterpreterError, match=r"expects shape \[2, 2\]"):
        interpret(m, torch.randn(3))
    with pytest.raises(InterpreterError, match="no function @nope"):
        interpret(m, torch.randn(2, 2), function="nope")


# -- random chains of elementwise / pad / relayout ops -----------------------------------
_UNARY = {"neg": torch.neg, "abs": torch.abs, "relu": torch.relu, "tanh": torch.tanh,
          "sigmoid": torch.sigmoid, "silu": F.silu}
_BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum, "minimum": torch.minimum}


@st.composite
def chains(draw):
    rank = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    layout = draw(st.permutations(range(rank)))
    steps = []
    cur = list(shape)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["unary", "binary_scalar", "binary_prev", "pad", "relayout", "permute"]))
        out_layout = draw(st.permutations(range(rank)))
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(_UNARY))), out_layout))
        elif kind == "binary_scalar":
            op = draw(st.sampled_from(sorted(_BINARY)))
            scalar = draw(st.sampled_from([-1.5, -0.5, 0.25, 2.0]))
            steps.append(("binary_scalar", (op, scalar, draw(st.booleans())), out_layout))
        elif kind == "binary_prev":
            steps.append(("binary_prev", draw(st.sampled_from(sorted(_BINARY))), out_layout))
        elif kind == "pad":  # a negative amount crops, never below one element
            low = [draw(st.integers(-1 if s > 1 else 0, 2)) for s in cur]
            high = [draw(st.integers(-1 if s + lo > 1 else 0, 2)) for s, lo in zip(cur, low)]
            value = draw(st.sampled_from([0.0, 1.0, -2.0]))
            steps.append(("pad", (low, high, value), out_layout))
            cur = [s + lo + hi for s, lo, hi in zip(cur, low, high)]
        elif kind == "relayout":
            steps.append(("relayout", None, out_layout))
        else:
            dims = draw(st.permutations(range(rank)))
            steps.append(("permute", dims, out_layout))
            cur = [cur[d] for d in dims]
    return shape, layout, steps


def _build_chain(shape, layout, steps):
    """The chain as IR text and as a torch function of the input."""
    lines, names = [], 0
    cur_shape, cur_t = list(shape), ty(shape, layout=layout)
    cur, prev = "x", "x"
    prev_t, prev_shape = cur_t, list(shape)
    ref_ops = []
    for kind, arg, out_layout in steps:
        names += 1
        out = f"v{names}"
        if kind == "pad":
            low, high, _ = arg
            new_shape = [s + lo + hi for s, lo, hi in zip(cur_shape, low, high)]
        elif kind == "permute":
            new_shape = [cur_shape[d] for d in arg]
        else:
            new_shape = cur_shape
        if kind == "binary_prev" and prev_shape != cur_shape:
            kind, arg = "unary", "neg"  # shapes diverged: no elementwise partner
        out_t = ty(new_shape, layout=out_layout)
        if kind == "unary":
            lines.append(f"  %{out} = tsr.{arg} %{cur} : ({cur_t}) -> {out_t}")
            ref_ops.append(lambda v, p, f=_UNARY[arg]: f(v))
        elif kind == "binary_scalar":
            op, scalar, scalar_left = arg
            lines.append(f"  %c{names} = tsr.constant {scalar:e} : f32")
            if scalar_left:
                lines.append(f"  %{out} = tsr.{op} %c{names}, %{cur} : (f32, {cur_t}) -> {out_t}")
                ref_ops.append(lambda v, p, f=_BINARY[op], s=scalar: f(torch.tensor(s), v))
            else:
                lines.append(f"  %{out} = tsr.{op} %{cur}, %c{names} : ({cur_t}, f32) -> {out_t}")
                ref_ops.append(lambda v, p, f=_BINARY[op], s=scalar: f(v, torch.tensor(s)))
        elif kind == "binary_prev":
            lines.append(f"  %{out} = tsr.{arg} %{cur}, %{prev} : ({cur_t}, {prev_t}) -> {out_t}")
            ref_ops.append(lambda v, p, f=_BINARY[arg]: f(v, p))
        elif kind == "pad":
            low, high, value = arg
            lines.append(f"  %c{names} = tsr.constant {value:e} : f32")
            lines.append(
                f"  %{out} = tsr.pad %{cur}, %c{names} {{low = array<i64: {', '.join(map(str, low))}>, "
                f"high = array<i64: {', '.join(map(str, high))}>}} : ({cur_t}, f32) -> {out_t}"
            )
            pads = [p for lo, hi in reversed(list(zip(low, high))) for p in (lo, hi)]
            ref_ops.append(lambda v, p, pads=pads, value=value: F.pad(v, pads, value=value))
        elif kind == "relayout":
            lines.append(f"  %{out} = tsr.relayout %{cur} : ({cur_t}) -> {out_t}")
            ref_ops.append(lambda v, p: v)
        else:
            lines.append(f"  %{out} = tsr.permute %{cur} {{dims = array<i64: {', '.join(map(str, arg))}>}} : ({cur_t}) -> {out_t}")
            ref_ops.append(lambda v, p, dims=arg: v.permute(*dims))
        prev, prev_t, prev_shape = cur, cur_t, cur_shape
        cur, cur_t, cur_shape = out, out_t, new_shape

    def reference(x):
        v, p = x, x
        for f in ref_ops:
            v, p = f(v, p), v
        return v

    return "\n".join(lines), cur, cur_t, reference


@settings(max_examples=60, deadline=None)
@given(chains(), st.integers(0, 2**31 - 1))
def test_random_chains_match_torch(chain, seed):
    shape, layout, steps = chain
    body, result, result_t, reference = _build_chain(shape, layout, steps)
    m = module([("x", ty(shape, layout=layout))], body, [(result, result_t)])
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    (got,) = interpret(m, x)
    expected = reference(x)
    assert_close(got, expected, f"chain {steps}", rtol=1e-5)
    out_layout = steps[-1][2]
    assert_layout(got, out_layout)
