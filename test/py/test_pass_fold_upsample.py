"""``fold-upsample-into-conv``: a conv of a nearest-upsampled tensor becomes a
polyphase conv of the small tensor, with the same results (interpreted before
and after, and compiled end to end against eager), and its weight prepared
once per parameter version."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tessera.dialects import tsr
from tessera.dialects.polyphase import PolyphaseDim

from pass_testing import check_pass, parse, tensor_type

SPEC = "fold-upsample-into-conv"


def module(x: tuple[int, ...], up: tuple[int, ...], k: tuple[int, ...], padding: tuple[int, ...],
           cout: int = 5, stride: int = 1, bias: bool = True) -> str:
    nsp = len(x) - 2
    w = (cout, x[1], *k)
    out = [x[0], cout, *((u + 2 * p - kk) // stride + 1 for u, p, kk in zip(up[2:], padding, k))]
    arr = lambda vals: "array<i64: " + ", ".join(map(str, vals)) + ">"  # noqa: E731
    b_arg = f", %b: {tensor_type([cout])}" if bias else ""
    b_use = ", %b" if bias else ""
    b_ty = f", {tensor_type([cout])}" if bias else ""
    return f"""
func.func @forward(%x: {tensor_type(x)}, %w: {tensor_type(w)}{b_arg}) -> {tensor_type(out)} {{
  %u = tsr.upsample %x {{mode = "nearest"}} : ({tensor_type(x)}) -> {tensor_type(up)}
  %y = tsr.conv %u, %w{b_use} {{stride = {arr([stride] * nsp)}, padding = {arr(padding)}, dilation = {arr([1] * nsp)}, groups = 1 : i64}}
       : ({tensor_type(up)}, {tensor_type(w)}{b_ty}) -> {tensor_type(out)}
  func.return %y : {tensor_type(out)}
}}"""


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


@pytest.mark.parametrize("x, up, k, padding, bias", [
    ((1, 3, 5, 6), (1, 3, 10, 12), (3, 3), (1, 1), True),          # 2x, odd channels
    ((2, 4, 3, 4, 5), (2, 4, 3, 8, 10), (3, 3, 3), (1, 1, 1), True),  # video VAE: time kept, H/W doubled
    ((1, 2, 2, 3, 3), (1, 2, 4, 6, 6), (3, 3, 3), (1, 1, 1), False),  # all three dims doubled, no bias
    ((1, 3, 4, 4), (1, 3, 12, 8), (5, 3), (2, 1), True),             # 3x in H with a 5-tap kernel
    ((1, 2, 7), (1, 2, 14), (3,), (1,), True),                       # 1-D
])
def test_polyphase_conv_matches(x, up, k, padding, bias):
    before = parse(module(x, up, k, padding, bias=bias))
    after = check_pass(before, SPEC)
    assert not ops(after, tsr.UpsampleOp)
    (conv,) = ops(after, tsr.ConvOp)
    assert len(ops(after, tsr.PolyphaseInterleaveOp)) == 1
    dims = [PolyphaseDim(u // n, kk, p) for u, n, kk, p in zip(up[2:], x[2:], k, padding)]
    assert list(conv.weight.type.get_shape())[2:] == [d.taps for d in dims]


@pytest.mark.parametrize("x, up, k, padding, stride", [
    ((1, 3, 5, 6), (1, 3, 10, 12), (1, 1), (0, 0), 1),  # 1x1: no fewer FLOPs
    ((1, 3, 5, 6), (1, 3, 10, 12), (3, 3), (1, 1), 2),  # strided
    ((1, 3, 5, 6), (1, 3, 10, 12), (3, 3), (0, 0), 1),  # output smaller than the upsampled size
])
def test_stays_where_it_does_not_apply(x, up, k, padding, stride):
    after = check_pass(parse(module(x, up, k, padding, stride=stride)), SPEC)
    assert ops(after, tsr.UpsampleOp) and not ops(after, tsr.PolyphaseInterleaveOp)


def test_phase_arithmetic():
    d = PolyphaseDim(2, 3, 1)  # a 3x3 conv after a 2x upsample: 2 taps per phase
    assert (d.first, d.taps, d.shifts, d.pads, d.conv_size(32)) == ((-1, 0), 2, (0, 1), (1, 1), 33)
    assert [[d.tap(a, t) for t in range(3)] for a in range(2)] == [[0, 1, 1], [0, 0, 1]]
    plain = PolyphaseDim(1, 3, 1)  # no upsampling: the conv as it was
    assert (plain.taps, plain.pads, plain.conv_size(4)) == (3, (1, 1), 4)
    assert not PolyphaseDim.supports(2, 3, 0)


class UpConv(nn.Module):
    def __init__(self, conv: nn.Module, scale):
        super().__init__()
        self.conv, self.scale = conv, scale

    def forward(self, x):
        return self.conv(F.interpolate(torch.relu(x), scale_factor=self.scale, mode="nearest"))


@pytest.mark.parametrize("conv, scale, shape", [
    (nn.Conv2d(6, 8, 3, padding=1), 2.0, (2, 6, 7, 5)),
    (nn.Conv3d(4, 4, 3, padding=1), (1.0, 2.0, 2.0), (1, 4, 3, 6, 6)),
])
def test_compiled_matches_eager_and_prepares_once(conv, scale, shape, prepare_count):
    torch.manual_seed(0)
    model = UpConv(conv, scale).eval()
    x = torch.randn(shape)
    compiled = torch.compile(model, backend="tessera", options={"freezing": True})
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        once = prepare_count["n"]
        assert once == 1
        conv.weight.mul_(-0.5)  # an in-place update: prepared and packed again, still right
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert prepare_count["n"] > once
        again = prepare_count["n"]
        compiled(x)
        assert prepare_count["n"] == again


def test_backend_can_leave_the_pass_out(capsys):
    from tessera.compiler.backend import BackendOptions

    # an entry with options goes by its pass name
    assert any(p.startswith("fold-upsample-into-conv") for p in BackendOptions().pipeline())
    assert not any(p.startswith("fold-upsample-into-conv")
                   for p in BackendOptions(disable=("fold-upsample-into-conv",)).pipeline())
    assert not any(p.startswith("assign-layouts") for p in BackendOptions(disable=("assign-layouts",)).pipeline())
    with pytest.raises(ValueError, match="cannot disable"):
        BackendOptions(disable=("fuse-everything",))
    torch.manual_seed(0)
    model = UpConv(nn.Conv2d(3, 4, 3, padding=1), 2.0).eval()
    x = torch.randn(1, 3, 5, 5)
    plain = torch.compile(model, backend="tessera", options={"disable": ["fold-upsample-into-conv"], "print_ir": True})
    with torch.no_grad():
        torch.testing.assert_close(plain(x), model(x), rtol=1e-4, atol=1e-4)
    printed = capsys.readouterr().out
    assert "tsr.upsample" in printed and "tsr.polyphase" not in printed


def test_bf16_upsample_conv_matches_eager(capsys):
    torch.manual_seed(0)
    model = UpConv(nn.Conv2d(8, 8, 3, padding=1), 2.0).eval().to(torch.bfloat16)
    x = torch.randn(1, 8, 6, 6, dtype=torch.bfloat16)
    compiled = torch.compile(model, backend="tessera", options={"print_ir": True})
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert "tsr.polyphase_interleave" in capsys.readouterr().out  # the rewritten graph ran
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("scale, folds", [(2.0, True), ((1.0, 2.0, 2.0), True), (1.5, False)])
def test_nearest_exact_upsample(scale, folds, capsys):
    """``mode="nearest-exact"`` (diffusers' WAN VAE) at a whole scale is ``nearest``:
    its conv folds into a polyphase conv; at 1.5x it stays ATen's, equal to eager."""
    torch.manual_seed(0)
    conv = nn.Conv3d(4, 4, 3, padding=1) if isinstance(scale, tuple) else nn.Conv2d(4, 6, 3, padding=1)
    shape = (1, 4, 3, 6, 6) if isinstance(scale, tuple) else (1, 4, 6, 5)

    def f(x):
        return conv(F.interpolate(torch.relu(x), scale_factor=scale, mode="nearest-exact"))

    x = torch.randn(shape)
    compiled = torch.compile(f, backend="tessera", options={"print_ir": True, "strict": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-4, atol=1e-4)
    printed = capsys.readouterr().out
    assert ("tsr.polyphase" in printed) == folds
    assert ("_upsample_nearest_exact" in printed) == (not folds)


@pytest.mark.parametrize("x, up, cout, freezing, folded", [
    ((1, 128, 32, 32), (1, 128, 64, 64), 128, True, False),     # Winograd's class: the conv stays
    ((1, 128, 32, 32), (1, 128, 64, 64), 128, False, False),    # weights transformed per call: so too
    ((1, 64, 32, 32), (1, 64, 64, 64), 64, True, True),         # fewer channels: the polyphase conv is faster
    ((1, 128, 32, 32), (1, 128, 64, 64), 64, True, True),       # fewer out
    ((1, 64, 4, 16, 16), (1, 64, 4, 32, 32), 64, True, False),  # 3-D: from 64 channels
    ((1, 32, 4, 16, 16), (1, 32, 4, 32, 32), 32, True, True),
    ((1, 128, 3, 3), (1, 128, 6, 6), 128, False, True),         # 2x2 tiles, weights per call: no Winograd
])
def test_x86_keeps_the_convs_winograd_computes_faster(x, up, cout, freezing, folded):
    """With a target (as the backend's pipeline runs it), a conv that x86 computes by Winograd
    faster than the polyphase conv (``conv_choice.winograd_over_polyphase``) is not folded;
    without one, every conv that saves multiply-adds is."""
    k = (3,) * (len(x) - 2)
    before = parse(module(x, up, k, (1,) * len(k), cout=cout))
    options = 'target=x86 features="+avx2,+fma"' + (" freezing=true" if freezing else "")
    after = check_pass(before, f"fold-upsample-into-conv{{{options}}}", seeds=(0,))
    assert bool(ops(after, tsr.PolyphaseInterleaveOp)) == folded
    assert ops(check_pass(before, SPEC, seeds=(0,)), tsr.PolyphaseInterleaveOp)


def test_a_target_the_pass_does_not_know_is_a_bad_option():
    from tessera.passes.fold_upsample_into_conv import FoldUpsampleIntoConv

    with pytest.raises(ValueError, match="x86"):
        FoldUpsampleIntoConv(target="vax")
