"""``split-group-stats``: GroupNorm's statistics over a channels-last tensor taken per
channel first, with the same results (interpreted before and after, and compiled end
to end against eager, static and dynamic)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from pass_testing import check_pass, parse, tensor_type
from torch import nn
from xdsl.ir import BlockArgument

from tessera.dialects import tsr

SPEC = "split-group-stats"
CHANNELS_LAST = {4: "nhwc", 5: "ndhwc"}


def module(x: tuple[int, ...], groups: int, reductions: tuple[str, ...] = ("var", "mean"), keepdim: bool = True,
           layout: str | None = None, elem: str = "f32", correction: float = 0.0, other_user: bool = False,
           relayout: bool = False) -> str:
    """The statistics of ``x``'s channel groups, as GroupNorm decomposes: ``var``/``mean``
    over dims 2 and 3 of its ``[N, G, C/G, prod(spatial)]`` reshape (of its relayout to the
    contiguous order, with ``relayout``)."""
    n, c, *spatial = x
    view = (n, groups, c // groups, math.prod(spatial))
    out = (n, groups, 1, 1) if keepdim else (n, groups)
    xt = tensor_type(x, elem, layout or CHANNELS_LAST[len(x)])
    vt, ot = tensor_type(view, elem), tensor_type(out, elem)
    body, results = [], []
    for k, r in enumerate(reductions):
        extra = f", correction = {correction} : f64" if r == "var" else ""
        body.append(f"  %r{k} = tsr.{r} %v {{dims = array<i64: 2, 3>, keepdim = {str(keepdim).lower()}{extra}}}"
                    f" : ({vt}) -> {ot}")
        results.append(f"%r{k}")
    types = [ot] * len(results)
    if other_user:
        body.append(f"  %e = tsr.exp %v : ({vt}) -> {vt}")
        results.append("%e")
        types.append(vt)
    src = f"%x : ({xt})"
    if relayout:
        ct = tensor_type(x, elem)
        src = f"%c : ({ct})"
        body.insert(0, f"  %c = tsr.relayout %x : ({xt}) -> {ct}")
    return f"""
func.func @forward(%x: {xt}) -> ({", ".join(types)}) {{
{body.pop(0) if relayout else ""}
  %v = tsr.reshape {src} -> {vt}
{chr(10).join(body)}
  func.return {", ".join(results)} : {", ".join(types)}
}}"""


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def grouped_view_reads(m) -> list:
    """The ops reading the grouped view of the function's argument."""
    return [u.operation for op in ops(m, tsr.ReshapeOp)
            if isinstance(op.input, BlockArgument) or isinstance(op.input.owner, tsr.RelayoutOp)
            for u in op.result.uses]


@pytest.mark.parametrize("x, groups, reductions, keepdim, other_user, relayout", [
    ((2, 8, 5, 6), 4, ("var", "mean"), True, False, False),      # GroupNorm's pair
    ((2, 8, 5, 6), 4, ("var", "mean"), True, False, True),       # of a relayout to nchw (a dynamic H*W's)
    ((1, 12, 3, 7), 1, ("var", "mean"), True, False, False),     # one group: a LayerNorm over C, H, W
    ((1, 6, 4, 4), 6, ("var", "mean"), True, False, False),      # a group per channel: InstanceNorm
    ((1, 8, 3, 4, 5), 2, ("var", "mean"), True, False, False),   # a video tensor (channels-last 3-D)
    ((2, 8, 5, 6), 4, ("mean",), False, False, False),           # a mean alone, without keepdim
    ((2, 8, 5, 6), 2, ("var",), False, False, False),            # a variance alone, without keepdim
    ((1, 8, 4, 4), 4, ("var", "mean"), True, True, False),       # the view has another user: it stays for it
])
def test_split_stats_match(x, groups, reductions, keepdim, other_user, relayout):
    before = parse(module(x, groups, reductions, keepdim, other_user=other_user, relayout=relayout))
    after = check_pass(before, SPEC)
    assert not ops(after, tsr.VarOp)
    assert [type(op) for op in grouped_view_reads(after)] == ([tsr.ExpOp] if other_user else [])
    # per channel over the pixels (the mean, and the squared deviations when a variance is asked)
    per_channel = [op for op in ops(after, tsr.MeanOp) if tuple(op.input.type.get_shape()) == x]
    assert len(per_channel) == (2 if "var" in reductions else 1)


@pytest.mark.parametrize("kwargs, left", [
    ({"layout": "nchw"}, 2),         # the group's elements are contiguous already
    ({"elem": "bf16"}, 2),           # per-channel partial results would be rounded
    ({"correction": 1.0}, 1),        # a sample variance (not GroupNorm's) stays; the mean is split
])
def test_left_alone(kwargs, left):
    before = parse(module((1, 8, 4, 4), 4, **kwargs))
    after = check_pass(before, SPEC)
    assert len(grouped_view_reads(after)) == left


class _ConvGroupNorm(nn.Module):
    """A VAE's resnet half-block: conv, GroupNorm, SiLU (the conv computes channels-last)."""

    def __init__(self, c: int = 32, groups: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.norm = nn.GroupNorm(groups, c)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x)))


@pytest.mark.parametrize("mode", ["freezing", "per_call", "dynamic"])
def test_backend_matches_eager(mode, monkeypatch):
    """In the backend's pipeline the GroupNorm's statistics are split (at every size of a
    dynamic compile) and the block matches eager; a NaN stays NaN."""
    from tessera.passes.split_group_stats import SplitGroupStatsPattern

    split = []
    match = SplitGroupStatsPattern.match_and_rewrite

    def counting(self, r, rewriter):
        before = len(list(r.result.uses)) if isinstance(r, tsr.ReshapeOp) else 0
        match(self, r, rewriter)
        if isinstance(r, tsr.ReshapeOp) and len(list(r.result.uses)) < before:
            split.append(r)

    monkeypatch.setattr(SplitGroupStatsPattern, "match_and_rewrite", counting)
    torch.manual_seed(0)
    model = _ConvGroupNorm().eval()
    compiled = torch.compile(model, backend="tessera", dynamic=mode == "dynamic" or None,
                             options={"freezing": mode == "freezing"})
    for size in ((12, 12), (9, 16)) if mode == "dynamic" else ((12, 12),):
        x = torch.randn(2, 32, *size) * 3 + 1
        with torch.no_grad():
            want, got = model(x), compiled(x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert len(split) >= 1
    x[0, 5, 2, 3] = float("nan")
    with torch.no_grad():
        got = compiled(x)
    assert got[0].isnan().all() and not got[1].isnan().any()  # the NaN's sample only (its group's statistics)
