"""``cancel-relayouts``: modules interpreted before and after the pass give the
same tensors in the same layouts, and no relayout reads another one afterwards."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.dialects import tsr

from pass_testing import apply_pass, assert_same_outputs, check_pass, parse, tensor_type

SHAPES = {4: (2, 3, 4, 5), 5: (2, 3, 2, 4, 3)}


def ty(rank: int, layout: tuple[int, ...] | None, elem: str = "f32") -> str:
    """A tensor type of the test shape of ``rank``; no encoding when ``layout`` is None."""
    shape = SHAPES[rank]
    if layout is None:
        return f"tensor<{''.join(f'{s}x' for s in shape)}{elem}>"
    return tensor_type(shape, elem, layout)


def relayouts(module) -> list[tsr.RelayoutOp]:
    return [op for op in module.walk() if isinstance(op, tsr.RelayoutOp)]


def folded_chains(module) -> list[tsr.RelayoutOp]:
    """Relayouts whose operand is made by another relayout that has no other use
    (the pass must leave none), or that change nothing."""
    return [
        op for op in relayouts(module)
        if (isinstance(op.input.owner, tsr.RelayoutOp) and op.input.has_one_use()) or op.input.type == op.result.type
    ]


NCHW, NHWC = (0, 1, 2, 3), (0, 2, 3, 1)
NCDHW, NDHWC = (0, 1, 2, 3, 4), (0, 2, 3, 4, 1)

# name -> (IR of @forward, number of relayouts after the pass)
MODULES = {
    "inverse_pair": (f"""
func.func @forward(%x: {ty(4, NCHW)}) -> {ty(4, NCHW)} {{
  %a = tsr.relayout %x : ({ty(4, NCHW)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %a : ({ty(4, NHWC)}) -> {ty(4, NCHW)}
  %y = tsr.silu %b : ({ty(4, NCHW)}) -> {ty(4, NCHW)}
  func.return %y : {ty(4, NCHW)}
}}""", 0),
    "chain_of_three": (f"""
func.func @forward(%x: {ty(5, NCDHW)}) -> {ty(5, (4, 3, 2, 1, 0))} {{
  %a = tsr.relayout %x : ({ty(5, NCDHW)}) -> {ty(5, NDHWC)}
  %b = tsr.relayout %a : ({ty(5, NDHWC)}) -> {ty(5, (1, 0, 2, 3, 4))}
  %c = tsr.relayout %b : ({ty(5, (1, 0, 2, 3, 4))}) -> {ty(5, (4, 3, 2, 1, 0))}
  func.return %c : {ty(5, (4, 3, 2, 1, 0))}
}}""", 1),
    "identity_bf16": (f"""
func.func @forward(%x: {ty(4, NHWC, "bf16")}) -> {ty(4, NHWC, "bf16")} {{
  %a = tsr.relayout %x : ({ty(4, NHWC, "bf16")}) -> {ty(4, NHWC, "bf16")}
  func.return %a : {ty(4, NHWC, "bf16")}
}}""", 0),
    "shared_middle": (f"""
func.func @forward(%x: {ty(4, NCHW)}) -> ({ty(4, NHWC)}, {ty(4, NCHW)}) {{
  %a = tsr.relayout %x : ({ty(4, NCHW)}) -> {ty(4, NHWC)}
  %s = tsr.silu %a : ({ty(4, NHWC)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %a : ({ty(4, NHWC)}) -> {ty(4, NCHW)}
  %e = tsr.exp %b : ({ty(4, NCHW)}) -> {ty(4, NCHW)}
  func.return %s, %e : {ty(4, NHWC)}, {ty(4, NCHW)}
}}""", 1),
    "shared_middle_rewired": (f"""
func.func @forward(%x: {ty(4, None)}) -> ({ty(4, NHWC)}, {ty(4, (3, 2, 1, 0))}) {{
  %a = tsr.relayout %x : ({ty(4, None)}) -> {ty(4, NHWC)}
  %s = tsr.silu %a : ({ty(4, NHWC)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %a : ({ty(4, NHWC)}) -> {ty(4, (3, 2, 1, 0))}
  func.return %s, %b : {ty(4, NHWC)}, {ty(4, (3, 2, 1, 0))}
}}""", 2),
    "same_order_other_type": (f"""
func.func @forward(%x: {ty(4, NCHW)}) -> {ty(4, None)} {{
  %a = tsr.relayout %x : ({ty(4, NCHW)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %a : ({ty(4, NHWC)}) -> {ty(4, None)}
  func.return %b : {ty(4, None)}
}}""", 1),
    "compute_between": (f"""
func.func @forward(%x: {ty(4, NCHW)}) -> {ty(4, NCHW)} {{
  %a = tsr.relayout %x : ({ty(4, NCHW)}) -> {ty(4, NHWC)}
  %s = tsr.neg %a : ({ty(4, NHWC)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %s : ({ty(4, NHWC)}) -> {ty(4, NCHW)}
  func.return %b : {ty(4, NCHW)}
}}""", 2),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_hand_written(name):
    text, remaining = MODULES[name]
    after = check_pass(parse(text), "cancel-relayouts", atol=0, rtol=0)
    assert len(relayouts(after)) == remaining
    assert folded_chains(after) == []


def test_shared_middle_keeps_the_middle_relayout():
    after = apply_pass(parse(MODULES["shared_middle"][0]), "cancel-relayouts")
    (mid,) = relayouts(after)
    assert [u.operation.name for u in mid.result.uses] == ["tsr.silu"]
    (exp,) = [op for op in after.walk() if isinstance(op, tsr.ExpOp)]
    assert exp.input is mid.input  # reads %x itself


def test_revisited_layout_is_left_to_cse():
    """%c comes back to %a's layout: folded onto %x it duplicates %a, which cse merges."""
    text = f"""
func.func @forward(%x: {ty(4, NCHW)}) -> ({ty(4, NHWC)}, {ty(4, (3, 2, 1, 0))}, {ty(4, NHWC)}) {{
  %a = tsr.relayout %x : ({ty(4, NCHW)}) -> {ty(4, NHWC)}
  %b = tsr.relayout %a : ({ty(4, NHWC)}) -> {ty(4, (3, 2, 1, 0))}
  %c = tsr.relayout %b : ({ty(4, (3, 2, 1, 0))}) -> {ty(4, NHWC)}
  func.return %a, %b, %c : {ty(4, NHWC)}, {ty(4, (3, 2, 1, 0))}, {ty(4, NHWC)}
}}"""
    after = check_pass(parse(text), "cancel-relayouts", atol=0, rtol=0)
    assert [op.input.name_hint for op in relayouts(after)] == ["x", "x", "x"]
    assert len(relayouts(check_pass(parse(text), "cancel-relayouts,cse", atol=0, rtol=0))) == 2


# -- random trees of relayouts ----------------------------------------------------------------
def perms(rank: int):
    """A dim order, or None for a type without an encoding."""
    return st.one_of(st.none(), st.permutations(range(rank)).map(tuple))


@st.composite
def trees(draw):
    """(rank, input layout, steps): a step relayouts value ``src`` (0 is the
    input, i the i-th relayout) to a layout; ``users`` get a tsr.neg each and
    ``outs`` are returned."""
    rank = draw(st.sampled_from(sorted(SHAPES)))
    n = draw(st.integers(1, 7))
    steps = [(draw(st.integers(0, i)), draw(perms(rank))) for i in range(n)]
    users = draw(st.sets(st.integers(1, n), max_size=n))
    outs = draw(st.sets(st.integers(0, n), min_size=1, max_size=n + 1))
    return rank, draw(perms(rank)), steps, sorted(users), sorted(outs)


def _build_tree(rank, layout, steps, users, outs) -> str:
    types = [ty(rank, layout)]
    lines = []
    for i, (src, perm) in enumerate(steps, start=1):
        types.append(ty(rank, perm))
        lines.append(f"  %v{i} = tsr.relayout %v{src} : ({types[src]}) -> {types[i]}")
    rets = [(f"v{o}", types[o]) for o in outs]
    for u in users:
        lines.append(f"  %n{u} = tsr.neg %v{u} : ({types[u]}) -> {types[u]}")
        rets.append((f"n{u}", types[u]))
    sig = ", ".join(t for _, t in rets)
    return (
        f"func.func @forward(%v0: {types[0]}) -> ({sig}) {{\n" + "\n".join(lines)
        + f"\n  func.return {', '.join('%' + v for v, _ in rets)} : {sig}\n}}\n"
    )


@settings(max_examples=60, deadline=None)
@given(trees(), st.integers(0, 2**31 - 1))
def test_random_trees(tree, seed):
    before = parse(_build_tree(*tree))
    after = apply_pass(before, "cancel-relayouts")
    assert_same_outputs(before, after, atol=0, rtol=0, seed=seed)
    assert folded_chains(after) == []
    assert not any(isinstance(op.input.owner, tsr.RelayoutOp) for op in relayouts(after))
    assert len(relayouts(after)) <= len(relayouts(before))
