"""``cast-constants``: modules interpreted before and after the pass agree, and
no op mixes a scalar constant of one type with tensors of another afterwards."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import bf16, f64, i1

from tessera.dialects import tsr
from tessera.passes.cast_constants import POLICIES, mixed_constant_uses

from pass_testing import TOLERANCES, apply_pass, assert_same_outputs, check_pass, parse, random_inputs, tensor_type

T = tensor_type
NHWC = (0, 2, 3, 1)

# name -> the body of @forward as IR; every one mixes an untyped literal with typed tensors.
MODULES = {
    "pad_fill_half": f"""
func.func @forward(%x: {T([1, 2, 3, 3], "bf16", NHWC)}, %h: {T([1, 2, 3, 3], "f16")}) -> ({T([1, 2, 5, 4], "bf16", NHWC)}, {T([1, 2, 5, 4], "f16")}) {{
  %z = tsr.constant 1.000000e-01 : f64
  %p = tsr.pad %x, %z {{low = array<i64: 0, 0, 1, 0>, high = array<i64: 0, 0, 1, 1>}} : ({T([1, 2, 3, 3], "bf16", NHWC)}, f64) -> {T([1, 2, 5, 4], "bf16", NHWC)}
  %q = tsr.pad %h, %z {{low = array<i64: 0, 0, 1, 0>, high = array<i64: 0, 0, 1, 1>}} : ({T([1, 2, 3, 3], "f16")}, f64) -> {T([1, 2, 5, 4], "f16")}
  func.return %p, %q : {T([1, 2, 5, 4], "bf16", NHWC)}, {T([1, 2, 5, 4], "f16")}
}}""",
    "where_fill_f16": f"""
func.func @forward(%x: {T([4, 8], "f16")}) -> {T([4, 8], "f16")} {{
  %t = tsr.constant 3.000000e-01 : f64
  %fill = tsr.constant -6.550400e+04 : f64
  %m = tsr.cmp gt, %x, %t : ({T([4, 8], "f16")}, f64) -> {T([4, 8], "i1")}
  %w = tsr.where %m, %x, %fill : ({T([4, 8], "i1")}, {T([4, 8], "f16")}, f64) -> {T([4, 8], "f16")}
  func.return %w : {T([4, 8], "f16")}
}}""",
    "arith_bf16": f"""
func.func @forward(%x: {T([2, 8], "bf16")}) -> ({T([2, 8], "bf16")}, {T([2, 8], "bf16")}, {T([2, 8], "bf16")}, {T([2, 8], "bf16")}) {{
  %one = tsr.constant 1.000000e-01 : f64
  %true = tsr.constant true
  %a = tsr.add %x, %one : ({T([2, 8], "bf16")}, f64) -> {T([2, 8], "bf16")}
  %b = tsr.maximum %a, %one : ({T([2, 8], "bf16")}, f64) -> {T([2, 8], "bf16")}
  %c = tsr.add %true, %x : (i1, {T([2, 8], "bf16")}) -> {T([2, 8], "bf16")}
  %d = tsr.div %one, %c : (f64, {T([2, 8], "bf16")}) -> {T([2, 8], "bf16")}
  func.return %a, %b, %c, %d : {T([2, 8], "bf16")}, {T([2, 8], "bf16")}, {T([2, 8], "bf16")}, {T([2, 8], "bf16")}
}}""",
    "arith_f16": f"""
func.func @forward(%x: {T([2, 8], "f16")}) -> ({T([2, 8], "f16")}, {T([2, 8], "f16")}) {{
  %three = tsr.constant 3.000000e+00 : f64
  %k = tsr.constant -2.000000e-01 : f64
  %a = tsr.div %x, %three : ({T([2, 8], "f16")}, f64) -> {T([2, 8], "f16")}
  %b = tsr.minimum %a, %k : ({T([2, 8], "f16")}, f64) -> {T([2, 8], "f16")}
  func.return %a, %b : {T([2, 8], "f16")}, {T([2, 8], "f16")}
}}""",
    "int_literal_f32": f"""
func.func @forward(%x: {T([3, 5])}) -> ({T([3, 5])}, {T([3, 5])}) {{
  %two = tsr.constant 2 : i64
  %seven = tsr.constant 7 : i64
  %p = tsr.pow %x, %two : ({T([3, 5])}, i64) -> {T([3, 5])}
  %s = tsr.sub %seven, %p : (i64, {T([3, 5])}) -> {T([3, 5])}
  func.return %p, %s : {T([3, 5])}, {T([3, 5])}
}}""",
    "shared_f32_bf16": f"""
func.func @forward(%x: {T([8])}, %b: {T([8], "bf16")}) -> ({T([8])}, {T([8], "bf16")}, {T([8], "bf16")}) {{
  %c = tsr.constant 1.000000e-01 : f64
  %y = tsr.mul %x, %c : ({T([8])}, f64) -> {T([8])}
  %z = tsr.mul %b, %c : ({T([8], "bf16")}, f64) -> {T([8], "bf16")}
  %t = tsr.sub %c, %z : (f64, {T([8], "bf16")}) -> {T([8], "bf16")}
  func.return %y, %z, %t : {T([8])}, {T([8], "bf16")}, {T([8], "bf16")}
}}""",
    "int_tensors": f"""
func.func @forward(%i: {T([4, 6], "i32")}) -> ({T([4, 6], "i1")}, {T([4, 6], "i1")}, {T([4, 6])}, {T([4, 6], "i32")}, {T([4, 6])}) {{
  %a = tsr.constant 2.500000e+00 : f64
  %b = tsr.constant 7 : i64
  %lt = tsr.cmp lt, %i, %a : ({T([4, 6], "i32")}, f64) -> {T([4, 6], "i1")}
  %ge = tsr.cmp ge, %b, %i : (i64, {T([4, 6], "i32")}) -> {T([4, 6], "i1")}
  %h = tsr.mul %i, %a : ({T([4, 6], "i32")}, f64) -> {T([4, 6])}
  %s = tsr.add %i, %b : ({T([4, 6], "i32")}, i64) -> {T([4, 6], "i32")}
  %q = tsr.div %s, %b : ({T([4, 6], "i32")}, i64) -> {T([4, 6])}
  func.return %lt, %ge, %h, %s, %q : {T([4, 6], "i1")}, {T([4, 6], "i1")}, {T([4, 6])}, {T([4, 6], "i32")}, {T([4, 6])}
}}""",
}


def constants(module) -> list[tsr.ConstantOp]:
    return [op for op in module.walk() if isinstance(op, tsr.ConstantOp)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", sorted(MODULES))
def test_same_outputs_and_no_mixed_uses(name, policy):
    before = parse(MODULES[name])
    assert mixed_constant_uses(before, policy), "the module should mix constant and tensor types"
    after = check_pass(before, f"cast-constants{{policy={policy}}}")
    assert mixed_constant_uses(after, policy) == []
    assert mixed_constant_uses(before, policy), "the pass changed the module it was given"


def test_shared_literal_gets_one_copy_per_dtype():
    after = apply_pass(parse(MODULES["shared_f32_bf16"]), "cast-constants")
    consts = constants(after)
    assert sorted(str(c.result.type) for c in consts) == ["bf16", "f32"]
    (half,) = [c for c in consts if c.result.type == bf16]
    assert half.value.value.data == 0.10009765625  # 0.1 rounded to bf16
    assert half.result.uses.get_length() == 2


def test_f32_compute_policy_keeps_cmp_native():
    after = apply_pass(parse(MODULES["where_fill_f16"]), "cast-constants{policy=f32-compute}")
    types = {op.name: [str(v.type) for v in op.operands] for op in after.walk() if op.name in ("tsr.cmp", "tsr.where")}
    assert types["tsr.cmp"][1] == "f16"
    assert types["tsr.where"][2] == "f32"


def test_mixed_uses_depend_on_policy():
    m = parse(f"""
func.func @forward(%x: {T([4], "bf16")}) -> {T([4], "bf16")} {{
  %c = tsr.constant 1.000000e+00 : f32
  %y = tsr.add %x, %c : ({T([4], "bf16")}, f32) -> {T([4], "bf16")}
  func.return %y : {T([4], "bf16")}
}}""")
    assert [op.name for op in mixed_constant_uses(m)] == ["tsr.add"]
    assert mixed_constant_uses(m, "f32-compute") == []


def test_typed_constants_are_left_alone():
    m = parse(f"""
func.func @forward(%x: {T([4], "bf16")}, %i: {T([4], "i64")}) -> ({T([4], "bf16")}, {T([4], "i64")}) {{
  %c = tsr.constant 5.000000e-01 : bf16
  %k = tsr.constant 3 : i64
  %y = tsr.mul %x, %c : ({T([4], "bf16")}, bf16) -> {T([4], "bf16")}
  %j = tsr.add %i, %k : ({T([4], "i64")}, i64) -> {T([4], "i64")}
  func.return %y, %j : {T([4], "bf16")}, {T([4], "i64")}
}}""")
    assert mixed_constant_uses(m) == []
    after = check_pass(m, "cast-constants")
    assert [str(c.value) for c in constants(after)] == [str(c.value) for c in constants(m)]


def test_random_inputs_have_no_zeros():
    m = parse(MODULES["int_tensors"])
    for seed in range(5):
        (i,) = random_inputs(m, seed)
        assert i.dtype == torch.int32 and (i != 0).all()


def test_bad_policy_is_rejected():
    from tessera.compiler.errors import UnknownPassError

    with pytest.raises(UnknownPassError, match="policy must be one of"):
        apply_pass(parse(MODULES["arith_f16"]), "cast-constants{policy=f64}")


# -- random chains of elementwise ops with literals ---------------------------------------
STEP_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "where_gt", "where_lt")
TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32, "i64": torch.int64}
INPUT_DTYPES = tuple(TORCH_DTYPES)
SHAPE = (3, 4)


@st.composite
def literals(draw, op: str):
    """A literal as (IR text, IR type, magnitude): never zero for div, never a bool for sub."""
    kinds = ("float", "int") if op == "sub" else ("float", "int", "bool")
    kind = draw(st.sampled_from(kinds))
    sign = draw(st.sampled_from((1, -1)))
    if kind == "float":
        v = sign * draw(st.floats(0.5, 2.0, allow_nan=False, allow_infinity=False))
        return f"{v:.6e}", "f64", abs(v)
    if kind == "int":
        v = sign * draw(st.integers(1, 2))
        return str(v), "i64", abs(v)
    v = True if op == "div" else draw(st.booleans())
    return ("true" if v else "false"), "i1", 1.0


@st.composite
def chains(draw):
    """(input element type, policy, steps); a step is (op, literal, literal on the left)."""
    elem = draw(st.sampled_from(INPUT_DTYPES))
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(STEP_OPS))
        lit = draw(literals(op))
        lhs = op not in ("div", "where_gt", "where_lt") and draw(st.booleans())
        steps.append((op, lit, lhs))
    return elem, draw(st.sampled_from(POLICIES)), steps


def _build_chain(elem: str, steps) -> tuple[str, str, float]:
    """The module text, the output element type and a bound on any value's magnitude."""
    lines, cur, cur_elem = [], "x", elem
    bound = 4.0 if elem.startswith(("f", "b")) else 100.0  # randn / randint(-100, 100)
    peak = bound
    for n, (op, (text, ltype, mag), lhs) in enumerate(steps):
        lit = f"l{n}"
        lines.append(f"  %{lit} = tsr.constant {text}" + ("" if ltype == "i1" else f" : {ltype}"))
        out_elem = cur_elem
        if cur_elem.startswith("i") and (ltype == "f64" or op == "div"):
            out_elem = "f32"  # torch promotes an int tensor with a float literal, and true division
        if op.startswith("where"):
            pred = "gt" if op == "where_gt" else "lt"
            lines.append(f"  %m{n} = tsr.cmp {pred}, %{cur}, %{lit} : ({T(SHAPE, cur_elem)}, {ltype}) -> {T(SHAPE, 'i1')}")
            lines.append(f"  %v{n} = tsr.where %m{n}, %{cur}, %{lit} : ({T(SHAPE, 'i1')}, {T(SHAPE, cur_elem)}, {ltype}) -> {T(SHAPE, out_elem)}")
            bound = max(bound, mag)
        else:
            a, b, at, bt = (lit, cur, ltype, T(SHAPE, cur_elem)) if lhs else (cur, lit, T(SHAPE, cur_elem), ltype)
            lines.append(f"  %v{n} = tsr.{op} %{a}, %{b} : ({at}, {bt}) -> {T(SHAPE, out_elem)}")
            bound = {"add": bound + mag, "sub": bound + mag, "mul": bound * max(1.0, mag), "div": bound / mag}.get(op, max(bound, mag))
        peak = max(peak, bound)
        cur, cur_elem = f"v{n}", out_elem
    text = (
        f"func.func @forward(%x: {T(SHAPE, elem)}) -> {T(SHAPE, cur_elem)} {{\n" + "\n".join(lines)
        + f"\n  func.return %{cur} : {T(SHAPE, cur_elem)}\n}}\n"
    )
    return text, cur_elem, peak


@settings(max_examples=60, deadline=None)
@given(chains(), st.integers(0, 2**31 - 1))
def test_random_chains(chain, seed):
    elem, policy, steps = chain
    text, out_elem, peak = _build_chain(elem, steps)
    before = parse(text)
    after = apply_pass(before, f"cast-constants{{policy={policy}}}")
    assert mixed_constant_uses(after, policy) == []
    assert not any(c.result.type in (f64, i1) for c in constants(after)), "an untyped literal is left"
    if elem != "i64":  # the first literal (f64, i64 or i1) meets another type
        assert mixed_constant_uses(before, policy)
    # Rounding a literal to a half type moves each step by a few ulps of the
    # largest magnitude the chain goes through; integer results are exact.
    rtol = TOLERANCES.get(TORCH_DTYPES[out_elem])
    atol = None if rtol is None else rtol * peak * len(steps)
    assert_same_outputs(before, after, atol, rtol, seed=seed)
