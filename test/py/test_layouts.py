"""Property tests of ``#tsr.layout``: dim orders from strides and back, the
attribute's text form, and tensors stored in a layout."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import TensorType, f32

from tessera.compiler.errors import ParseError
from tessera.compiler.ir_io import parse_module, print_module
from tessera.dialects.tsr.layout import (
    NAMED_LAYOUTS,
    LayoutAttr,
    channels_last,
    identity,
    layout_of,
    perm_from_strides,
    strides_for,
)
from tessera.compiler.placements import allocate, in_layout, is_in_layout

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def shape_and_perm(draw, min_rank: int = 0, max_rank: int = 5, min_size: int = 1):
    rank = draw(st.integers(min_rank, max_rank))
    shape = draw(st.lists(st.integers(min_size, 4), min_size=rank, max_size=rank))
    perm = draw(st.permutations(range(rank)))
    return tuple(shape), tuple(perm)


def _non_unit_order(shape, perm):
    return [d for d in perm if shape[d] != 1]


@SETTINGS
@given(shape_and_perm())
def test_perm_from_strides_inverts_strides_for(sp):
    shape, perm = sp
    strides = strides_for(shape, perm)
    got = perm_from_strides(shape, strides)
    assert sorted(got) == list(range(len(shape))), got
    # The order of the dims that carry information (size > 1) is reproduced ...
    assert _non_unit_order(shape, got) == _non_unit_order(shape, perm)
    # ... so the recovered order gives the very same strides on those dims.
    again = strides_for(shape, got)
    assert [s for s, n in zip(again, shape) if n != 1] == [s for s, n in zip(strides, shape) if n != 1]


@SETTINGS
@given(shape_and_perm(min_size=2))
def test_perm_from_strides_exact_without_unit_dims(sp):
    shape, perm = sp
    assert perm_from_strides(shape, strides_for(shape, perm)) == perm


@pytest.mark.parametrize("shape, strides, perm", [
    ((2, 3, 8, 8), (8, 0, 0, 1), (0, 1, 2, 3)),    # a mask expanded over heads and rows
    ((2, 3, 8, 8), (0, 0, 1, 8), (0, 1, 3, 2)),    # a transposed one
    ((2, 3, 4, 4), (48, 1, 0, 12), (0, 2, 3, 1)),  # channels-last, broadcast along H
])
def test_perm_from_strides_places_broadcast_dims_like_unit_dims(shape, strides, perm):
    """A broadcast dim (stride 0) says nothing of the order: the others keep
    theirs, and the innermost one of an expanded row stays innermost."""
    assert perm_from_strides(shape, strides) == perm


@SETTINGS
@given(shape_and_perm())
def test_perm_from_strides_of_torch_tensors(sp):
    """The strides torch gives a permuted-contiguous tensor map back to its order."""
    shape, perm = sp
    physical = torch.empty([shape[d] for d in perm])
    inv = [perm.index(d) for d in range(len(shape))]
    t = physical.permute(inv)
    assert tuple(t.shape) == shape
    got = perm_from_strides(shape, t.stride())
    assert _non_unit_order(shape, got) == _non_unit_order(shape, perm)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_well_known_orders_win_ties(rank):
    shape = (1, 4) + (1,) * (rank - 2)  # only channels > 1: any order explains it
    assert perm_from_strides(shape, strides_for(shape, identity(rank))) == identity(rank)
    shape = (2, 3) + (4,) * (rank - 2)
    cl = channels_last(rank)
    assert perm_from_strides(shape, strides_for(shape, cl)) == cl
    t = torch.empty(shape).to(memory_format=torch.channels_last if rank == 4 else torch.contiguous_format)
    if rank == 4:
        assert perm_from_strides(shape, t.stride()) == NAMED_LAYOUTS["nhwc"]


def _func_text(shape, layout_text: str) -> str:
    dims = "x".join(map(str, shape)) + "x" if shape else ""
    ty = f"tensor<{dims}f32, {layout_text}>"
    return f"func.func @forward(%x: {ty}) -> {ty} {{\n  func.return %x : {ty}\n}}\n"


def _arg_type(module) -> TensorType:
    fn = module.body.block.ops.first
    return fn.body.block.args[0].type


@SETTINGS
@given(shape_and_perm())
def test_layout_attr_round_trips_through_text(sp):
    shape, perm = sp
    text = _func_text(shape, f"#tsr.layout<[{', '.join(map(str, perm))}]>")
    module = parse_module(text)
    t = _arg_type(module)
    assert isinstance(t.encoding, LayoutAttr)
    assert t.encoding.perm == perm and layout_of(t) == perm
    printed = print_module(module)
    name = next((n for n, p in NAMED_LAYOUTS.items() if p == perm), None)
    if name is not None:
        assert f"#tsr.layout<{name}>" in printed
    reparsed = parse_module(printed)
    assert _arg_type(reparsed) == t
    assert print_module(reparsed) == printed


@pytest.mark.parametrize("name", sorted(NAMED_LAYOUTS))
def test_named_layouts_parse_to_their_orders(name):
    perm = NAMED_LAYOUTS[name]
    module = parse_module(_func_text((2,) * len(perm), f"#tsr.layout<{name}>"))
    assert _arg_type(module).encoding.perm == perm
    assert f"#tsr.layout<{name}>" in print_module(module)
    assert LayoutAttr(perm) == _arg_type(module).encoding


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("#tsr.layout<[0, 0, 1]>", "not a permutation"),
        ("#tsr.layout<[0, 1, 3]>", "not a permutation"),
        ("#tsr.layout<nhcw>", "unknown layout 'nhcw'"),
    ],
)
def test_bad_layouts_are_located_parse_errors(layout, message):
    with pytest.raises(ParseError, match=message) as info:
        parse_module(_func_text((2, 2, 2), layout), "bad.mlir")
    assert info.value.location is not None
    assert info.value.location.file == "bad.mlir" and info.value.location.line == 1


def test_layout_rank_mismatch_fails_verification():
    from tessera.compiler.errors import VerificationError
    from tessera.compiler.ir_io import verify_module

    module = parse_module(_func_text((2, 2), "#tsr.layout<nhwc>"), "rank.mlir")
    with pytest.raises(VerificationError, match="layout of rank 4 on a rank-2 tensor"):
        verify_module(module)


_DTYPES = st.sampled_from([torch.float32, torch.float16, torch.int32, torch.int8, torch.bool])


@SETTINGS
@given(shape_and_perm(max_rank=4), _DTYPES, st.integers(0, 2**31 - 1), st.booleans())
def test_in_layout_gives_requested_strides_and_same_values(sp, dtype, seed, start_permuted):
    shape, perm = sp
    from tessera.dialects.tsr import dtypes

    gen = torch.Generator().manual_seed(seed)
    src = (torch.randn(shape, generator=gen) * 50).to(dtype)
    if start_permuted and len(shape) > 1:  # a source with some other layout
        src = src.transpose(0, -1).contiguous().transpose(0, -1)
    ttype = TensorType(dtypes.to_mlir(dtype), shape, LayoutAttr(perm))
    out = in_layout(src, ttype)
    assert out.dtype == dtype and tuple(out.shape) == shape
    assert torch.equal(out, src)
    want = strides_for(shape, perm)
    assert all(s == w for s, w, n in zip(out.stride(), want, shape) if n > 1), (out.stride(), want)
    assert is_in_layout(out, ttype)
    # Already in layout: kept as is, no copy.
    assert in_layout(out, ttype) is out
    assert allocate(ttype).stride() == want


def test_in_layout_broadcasts_and_converts():
    ttype = TensorType(f32, [2, 3], LayoutAttr([1, 0]))
    src = torch.tensor([1.0, 2.0, 3.0])
    out = in_layout(src, ttype)
    assert torch.equal(out, src.expand(2, 3))
    assert out.stride() == (1, 2)
    assert not is_in_layout(src.expand(2, 3), ttype)
