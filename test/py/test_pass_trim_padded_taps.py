"""``trim-padded-taps``: conv taps that read only zero padding are dropped and zero
pads fold into the conv, with the same results (interpreted before and after, and
compiled end to end against eager)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tessera.dialects import tsr
from tessera.dialects.tsr.shapes import ints
from tessera.passes.trim_padded_taps import live_taps

from pass_testing import check_pass, parse, tensor_type

SPEC = "trim-padded-taps"


def module(x: tuple[int, ...], k: tuple[int, ...], padding: tuple[int, ...], pad: tuple[tuple[int, int], ...] | None = None,
           stride: int = 1, dilation: int = 1, cout: int = 5) -> str:
    """A conv of ``x`` (zero padded by ``pad``'s (low, high) per spatial dim first, when given)."""
    nsp = len(x) - 2
    arr = lambda vals: "array<i64: " + ", ".join(map(str, vals)) + ">"  # noqa: E731
    padded = (*x[:2], *(n + lo + hi for n, (lo, hi) in zip(x[2:], pad))) if pad else x
    w = (cout, x[1], *k)
    out = [x[0], cout, *((n + 2 * p - dilation * (kk - 1) - 1) // stride + 1 for n, p, kk in zip(padded[2:], padding, k))]
    pad_ir = f"""
  %z = tsr.constant 0.000000e+00 : f32
  %p = tsr.pad %x, %z {{low = {arr([0, 0, *(lo for lo, _ in pad)])}, high = {arr([0, 0, *(hi for _, hi in pad)])}}}
       : ({tensor_type(x)}, f32) -> {tensor_type(padded)}""" if pad else ""
    return f"""
func.func @forward(%x: {tensor_type(x)}, %w: {tensor_type(w)}, %b: {tensor_type([cout])}) -> {tensor_type(out)} {{{pad_ir}
  %y = tsr.conv {"%p" if pad else "%x"}, %w, %b {{stride = {arr([stride] * nsp)}, padding = {arr(padding)}, dilation = {arr([dilation] * nsp)}, groups = 1 : i64}}
       : ({tensor_type(padded)}, {tensor_type(w)}, {tensor_type([cout])}) -> {tensor_type(out)}
  func.return %y : {tensor_type(out)}
}}"""


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


@pytest.mark.parametrize("x, k, padding, pad, stride, dilation, kernel, conv_padding, pads", [
    # a causal video VAE's first frame (WAN): the time taps reading the causal pad go, the spatial pad folds
    ((1, 3, 1, 6, 6), (3, 3, 3), (0, 0, 0), ((2, 0), (1, 1), (1, 1)), 1, 1, [1, 3, 3], [0, 1, 1], 0),
    # two frames: the first time tap still reads the pad only; one frame of it stays in front
    ((1, 3, 2, 6, 6), (3, 3, 3), (0, 0, 0), ((2, 0), (1, 1), (1, 1)), 1, 1, [2, 3, 3], [0, 0, 0], 1),
    # a video network's last stage at one frame (r3d_18 at 1x7x7)
    ((1, 4, 1, 7, 7), (3, 3, 3), (1, 1, 1), None, 1, 1, [1, 3, 3], [0, 1, 1], 0),
    ((1, 4, 1, 7, 7), (3, 3, 3), (1, 1, 1), None, 2, 1, [1, 3, 3], [0, 1, 1], 0),
    # stride 2 over 6 columns: padding 1 on both sides still gives 3 outputs (the last one unused)
    ((1, 4, 1, 6), (3, 3), (1, 1), None, 2, 1, [1, 3], [0, 1], 0),
    # a 3x3 conv of one pixel: a 1x1 conv; of one row: 1x3
    ((2, 4, 1, 1), (3, 3), (1, 1), None, 1, 1, [1, 1], [0, 0], 0),
    ((1, 4, 1, 5), (3, 3), (1, 1), None, 1, 1, [1, 3], [0, 1], 0),
    # dilated: the outer taps of a 5-wide window read padding only
    ((1, 4, 1, 6), (3, 3), (2, 2), None, 1, 2, [1, 3], [0, 2], 0),
    # dilation 2 over 3 pixels padded by 1: only the middle tap, reading the middle pixel: a crop in front
    ((1, 4, 3, 3), (3, 3), (1, 1), None, 1, 2, [1, 1], [0, 0], 1),
    # a symmetric zero pad alone folds into the conv's padding
    ((1, 3, 6, 6), (3, 3), (0, 0), ((1, 1), (1, 1)), 1, 1, [3, 3], [1, 1], 0),
    # a pad on one side of one dim, taps trimmed in the other: the pad stays, the conv's padding in it
    ((1, 3, 5, 1), (3, 3), (0, 1), ((2, 0), (0, 0)), 1, 1, [3, 1], [0, 0], 1),
])
def test_trimmed_conv_matches(x, k, padding, pad, stride, dilation, kernel, conv_padding, pads):
    before = parse(module(x, k, padding, pad, stride, dilation))
    after = check_pass(before, SPEC)
    (conv,) = ops(after, tsr.ConvOp)
    assert list(conv.weight.type.get_shape())[2:] == kernel
    assert list(ints(conv.padding)) == conv_padding
    assert len([p for p in ops(after, tsr.PadOp) if p.results[0].uses]) == pads


@pytest.mark.parametrize("x, padding, pad", [
    ((1, 3, 6, 6), (1, 1), None),                             # every tap reads the image somewhere
    ((1, 3, 3, 6, 6), (0, 0, 0), ((2, 0), (1, 1), (1, 1))),   # a causal pad before 3 frames
])
def test_conv_reading_real_data_everywhere_is_left_alone(x, padding, pad):
    before = parse(module(x, (3,) * (len(x) - 2), padding, pad))
    after = check_pass(before, SPEC)
    (conv,) = ops(after, tsr.ConvOp)
    assert not isinstance(conv.weight.owner, tsr.SliceOp)
    assert list(conv.weight.type.get_shape())[2:] == [3] * (len(x) - 2)
    assert isinstance(conv.input.owner, tsr.PadOp) == (pad is not None)


@pytest.mark.parametrize("size, low, out, kernel, stride, dilation, want", [
    (1, 1, 1, 3, 1, 1, (1, 1)), (1, 2, 1, 3, 1, 1, (2, 2)), (2, 2, 2, 3, 1, 1, (1, 2)), (3, 2, 3, 3, 1, 1, (0, 2)),
    (7, 1, 4, 3, 2, 1, (0, 2)), (1, 1, 1, 3, 2, 1, (1, 1)), (1, 2, 1, 3, 1, 2, (1, 1)),
    (3, 0, 1, 3, 1, 1, (0, 2)), (1, 5, 1, 3, 1, 1, None),
])
def test_live_taps(size, low, out, kernel, stride, dilation, want):
    assert live_taps(size, low, out, kernel, stride, dilation) == want


class _Causal(nn.Module):
    """A causal 3x3x3 conv as WAN's decoder runs it (the time pad before the conv), then SiLU."""

    def __init__(self, c: int = 16):
        super().__init__()
        self.conv = nn.Conv3d(c, c, 3)

    def forward(self, x):
        return F.silu(self.conv(F.pad(x, (1, 1, 1, 1, 2, 0))))


@pytest.mark.parametrize("freezing", [True, False])
@pytest.mark.parametrize("frames", [1, 3])
def test_backend_matches_eager(freezing, frames, monkeypatch):
    """In the backend's pipeline: one frame's conv is rewritten (1x3x3 taps), three frames' is not."""
    from tessera.passes.trim_padded_taps import TrimPaddedTapsPattern

    rewritten = []
    match = TrimPaddedTapsPattern.match_and_rewrite

    def counting(self, conv, rewriter):
        match(self, conv, rewriter)
        if isinstance(conv, tsr.ConvOp) and conv.parent is None:  # replaced and erased
            rewritten.append(conv)

    monkeypatch.setattr(TrimPaddedTapsPattern, "match_and_rewrite", counting)
    torch.manual_seed(0)
    model = _Causal().eval()
    x = torch.randn(1, 16, frames, 8, 8)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="tessera", options={"freezing": freezing})(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())
    assert len(rewritten) == (1 if frames == 1 else 0)
