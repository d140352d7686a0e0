"""``addmm-as-conv``: a linear layer of many rows becomes a 1x1 conv on x86's own
conv kernel (interpreted before and after the pass), through views that move no
data; what the pass leaves alone stays ``tsr.addmm``; compiled models with such
linears (a ConvNeXt block, a transformer MLP) match eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tessera.compiler.report import collect_reports
from tessera.dialects import tsr

from pass_testing import check_pass, parse, tensor_type as T

PASS = 'addmm-as-conv{target=x86 features="+avx512f,+avx512bw,+avx512vl,+avx512dq,+fma,+avx2"}'


def linear(m: int = 128, k: int = 32, n: int = 48, elem: str = "f32", w_layout=(1, 0), bias=None) -> str:
    bias = [n] if bias is None else bias
    b, x, w, y = T(bias, elem), T([m, k], elem), T([k, n], elem, list(w_layout)), T([m, n], elem)
    return f"""
func.func @forward(%b: {b}, %x: {x}, %wt: {w}) -> {y} {{
  %y = tsr.addmm %b, %x, %wt : ({b}, {x}, {w}) -> {y}
  func.return %y : {y}
}}"""


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def test_many_rows_become_a_1x1_conv_of_views():
    after = check_pass(parse(linear()), PASS, rtol=1e-5, atol=1e-5)
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.input.type.get_shape() == (1, 32, 1, 128) and conv.weight.type.get_shape() == (48, 32, 1, 1)
    assert conv.bias is conv.parent_block().args[0]
    assert not ops(after, tsr.AddmmOp) and not ops(after, tsr.RelayoutOp)


def test_rows_that_outgrow_a_cache_row_are_an_image_of_rows():
    """The pixels are an image of rows of ``W`` (x86's ``row_view``, the target's
    ``own_conv_rows``) once one row of all of them holds more than ``ROW_BYTES`` of
    inputs, so the kernel reads each row once for every channel block; a row count with
    no divisor of ``MIN_ROW_PIXELS`` or more, or a weight the kernel walks block by
    block, stays one row."""
    from tessera.compiler.targets.x86.conv.rows import MIN_ROW_PIXELS, ROW_BYTES, row_view

    assert row_view(25088, 384, 96) == (196, 128) and row_view(3136, 96, 384) == (7, 448)
    assert row_view(128, 32, 48) == (1, 128)  # fits one row
    assert row_view(4099, 256, 64) == (1, 4099)  # a prime: no row of MIN_ROW_PIXELS or more
    assert row_view(1568, 1536, 384) == (1, 1568)  # a 2.4 MB weight
    for m, k, n in ((25088, 384, 96), (6272, 768, 192), (1568, 1536, 16), (97, 4096, 8), (5000, 24, 24)):
        h, w = row_view(m, k, n)
        assert h * w == m and (h == 1 or (w * k * 4 <= ROW_BYTES and w >= MIN_ROW_PIXELS))
    after = check_pass(parse(linear(m=1536, k=64, n=24)), PASS, rtol=1e-5, atol=1e-5)
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.input.type.get_shape() == (1, 64, 2, 768) and conv.result.type.get_shape() == (1, 24, 2, 768)


def test_a_product_without_bias_becomes_a_conv_without_bias():
    x, w, y = T([96, 32]), T([32, 48], "f32", [1, 0]), T([96, 48])
    text = f"""
func.func @forward(%x: {x}, %wt: {w}) -> {y} {{
  %y = tsr.matmul %x, %wt : ({x}, {w}) -> {y}
  func.return %y : {y}
}}"""
    after = check_pass(parse(text), PASS, rtol=1e-5, atol=1e-5)
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.bias is None and not ops(after, tsr.MatmulOp)


@pytest.mark.parametrize("m", [1, 16])
def test_with_freezing_fewer_rows_become_a_conv(m):
    """A weight packed once pays from 1 row (a classifier's GEMV); packed on every call, from 64."""
    frozen = check_pass(parse(linear(m=m)), PASS[:-1] + " freezing=true}", rtol=1e-5, atol=1e-5)
    assert ops(frozen, tsr.ConvOp) and not ops(frozen, tsr.AddmmOp)
    per_call = check_pass(parse(linear(m=m)), PASS)
    assert ops(per_call, tsr.AddmmOp) and not ops(per_call, tsr.ConvOp)


@pytest.mark.parametrize("case", ["few rows", "bf16", "weight stored [K, N]", "bias of one element"])
def test_what_stays_a_gemm(case):
    text = {"few rows": linear(m=4), "bf16": linear(elem="bf16"), "weight stored [K, N]": linear(w_layout=(0, 1)),
            "bias of one element": linear(bias=[1])}[case]
    after = check_pass(parse(text), PASS)
    assert ops(after, tsr.AddmmOp) and not ops(after, tsr.ConvOp)


def test_with_freezing_a_weight_stored_k_by_n_is_transposed_into_the_conv():
    """GPT-2's ``Conv1D`` (``addmm(b, x, w)``, ``w`` a ``[K, N]`` argument): with freezing the
    permute to the conv's ``[N, K]`` weight is a copy (made once, with the packing), not a view.
    So is a ``[K, N]`` weight computed from arguments alone (a bf16 weight widened to f32, made
    once too); one that a library op computes stays the GEMM (it would be copied on every call)."""
    from tessera.passes.fuse_kernels import is_view

    frozen = check_pass(parse(linear(w_layout=(0, 1))), PASS[:-1] + " freezing=true}", rtol=1e-5, atol=1e-5)
    (conv,) = ops(frozen, tsr.ConvOp)
    transpose = conv.weight.owner.input.owner
    assert isinstance(transpose, tsr.PermuteOp) and not is_view(transpose) and not ops(frozen, tsr.AddmmOp)
    b, x, w, y, a = T([48]), T([128, 32]), T([32, 48], "f32", [0, 1]), T([128, 48]), T([32, 32])
    for make, taken in ((f"tsr.exp %w : ({w}) -> {w}", True), (f"tsr.matmul %a, %w : ({a}, {w}) -> {w}", False)):
        computed = f"""
func.func @forward(%b: {b}, %x: {x}, %w: {w}, %a: {a}) -> {y} {{
  %w2 = {make}
  %y = tsr.addmm %b, %x, %w2 : ({b}, {x}, {w}) -> {y}
  func.return %y : {y}
}}"""
        after = check_pass(parse(computed), PASS[:-1] + " freezing=true}", rtol=1e-5, atol=1e-5)
        assert bool(ops(after, tsr.AddmmOp)) != taken


def test_without_an_own_conv_kernel_nothing_changes():
    after = check_pass(parse(linear()), 'addmm-as-conv{target=x86 features="+sse4.2"}')
    assert ops(after, tsr.AddmmOp) and not ops(after, tsr.ConvOp)


class Conv1DMlp(nn.Module):
    """GPT-2's MLP: ``Conv1D`` layers, ``addmm(b, x, w)`` with ``w`` stored ``[K, N]``."""

    def __init__(self, dim: int = 48):
        super().__init__()
        self.w1, self.b1 = nn.Parameter(torch.randn(dim, 2 * dim) / 7), nn.Parameter(torch.randn(2 * dim))
        self.w2, self.b2 = nn.Parameter(torch.randn(2 * dim, dim) / 10), nn.Parameter(torch.randn(dim))

    def forward(self, x):
        h = torch.addmm(self.b1, x.reshape(-1, x.shape[-1]), self.w1)
        return torch.addmm(self.b2, nn.functional.gelu(h), self.w2).reshape(x.shape)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block: depthwise 7x7, LayerNorm over channels-last, two linears with GELU, layer scale."""

    def __init__(self, dim: int = 32):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(nn.functional.gelu(self.fc1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


@pytest.mark.parametrize("freezing", [False, True])
@pytest.mark.parametrize("model, x", [(ConvNeXtBlock(), torch.randn(2, 32, 12, 12)),
                                      (nn.Sequential(nn.Linear(48, 96), nn.GELU(), nn.Linear(96, 48)),
                                       torch.randn(4, 32, 48)),
                                      (nn.Sequential(nn.Linear(48, 96, bias=False), nn.SiLU(),
                                                     nn.Linear(96, 48, bias=False)), torch.randn(2, 40, 48)),
                                      (nn.Sequential(nn.Linear(256, 64), nn.GELU(), nn.Linear(64, 256)),
                                       torch.randn(1100, 256))],  # images of 5 x 220 and 2 x 550 pixels
                         ids=["convnext_block", "transformer_mlp", "bias_free_mlp", "rows_of_an_image"])
def test_compiled_linears_run_as_convs_and_match_eager(model, x, freezing):
    from tessera.compiler.targets.x86.conv_choice import host_isa

    model.eval()
    conv_kernels = []
    for disable in ((), ("addmm-as-conv",)):
        torch._dynamo.reset()
        options = {"strict": True, "freezing": freezing, "disable": disable}
        with torch.no_grad(), collect_reports() as reports:
            want = model(x)
            compiled = torch.compile(model, backend="tessera", options=options)
            for _ in range(2):
                torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4)
        (report,) = reports
        conv_kernels.append(report.conv_kernels)
    if host_isa() is not None:  # a CPU with tessera's conv kernel: each of the two linears is one of its convs
        assert conv_kernels[0] - conv_kernels[1] == 2, conv_kernels


def test_without_freezing_a_large_weight_stored_k_by_n_is_read_in_place():
    """Without freezing a ``[K, N]`` argument becomes the conv's weight through views, output
    channels innermost (``dhwio``), where the kernel packs such a weight itself (one over L2);
    a small one stays the GEMM (its packing would be a transposing copy on every call)."""
    from tessera.compiler.targets.x86.conv_choice import weight_layout
    from tessera.passes.fuse_kernels import is_view

    after = check_pass(parse(linear(k=512, n=640, w_layout=(0, 1))), PASS, rtol=1e-4, atol=1e-4)
    (conv,) = ops(after, tsr.ConvOp)
    reshape = conv.weight.owner
    assert weight_layout(conv.weight) == "dhwio" and is_view(reshape) and is_view(reshape.input.owner)
    assert not ops(after, tsr.AddmmOp)


@pytest.mark.parametrize("freezing", [False, True])
def test_conv1d_linears_run_as_convs_with_freezing(freezing):
    """GPT-2's ``Conv1D`` MLP matches eager; with freezing each of its ``[K, N]`` weights is
    transposed once and both products run on the conv kernel, without it they stay GEMMs."""
    from tessera.compiler.targets.x86.conv_choice import host_isa

    torch.manual_seed(0)
    model, x = Conv1DMlp().eval(), torch.randn(2, 64, 48)
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        compiled = torch.compile(model, backend="tessera", options={"strict": True, "freezing": freezing})
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model.w1.mul_(-1.0)  # a new version: transposed and packed again
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    (report,) = reports
    if host_isa() is not None:
        assert report.conv_kernels == (2 if freezing else 0), report.summary()


def test_large_conv1d_linears_without_freezing_run_on_kernels_reading_their_weights():
    """GPT-2 small's MLP shape without freezing: both ``[K, N]`` weights (2.4 MB) are read in
    place by kernels that pack them (``_wdhwio``); eager's result, also after a write through
    ``.data`` that no version counter records."""
    from tessera.compiler.targets.x86.conv_choice import host_isa

    torch.manual_seed(0)
    model, x = Conv1DMlp(768).eval(), torch.randn(1, 64, 768)
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        compiled = torch.compile(model, backend="tessera", options={"strict": True})
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model.w2.data.mul_(-2.0)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    (report,) = reports
    if host_isa() is not None:
        assert report.conv_kernels == 2, report.summary()


def test_dynamic_rows_run_as_a_conv_of_every_size():
    """Rows of a symbolic size (a sequence served at many lengths, ``dynamic=True``):
    with ``freezing`` the linears are one conv program for every size, and match eager."""
    model = nn.Sequential(nn.Linear(48, 96), nn.GELU(), nn.Linear(96, 48)).eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True, "freezing": True})
    with torch.no_grad(), collect_reports() as reports:
        for rows in (100, 130, 77, 256):
            x = torch.randn(rows, 48)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    (report,) = reports  # one program for every size
    from tessera.compiler.targets.x86.conv_choice import host_isa

    if host_isa() is not None:
        assert report.conv_kernels == 2, report.summary()


def test_dynamic_rows_without_freezing_run_the_gemm_where_the_weight_outweighs_them():
    """A classifier's linear (1280 -> 1000, its 5 MB weight packed by the kernel itself)
    at dynamic rows without freezing: one conv for every size, which at 8 rows (a weight
    160x its output) is the library's GEMM on the plain weight and at 512 rows the
    kernel; eager's result at both, NaN kept."""
    from program_capture import programs_run

    from tessera.compiler.targets.x86.conv.sized import SizedConv, _LibraryLaunch
    from tessera.compiler.targets.x86.conv_choice import host_isa
    from tessera.runtime.program import Launch

    torch.manual_seed(0)
    model = nn.Linear(1280, 1000).eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for rows in (8, 512, 8):
            x = torch.randn(rows, 1280)
            x[rows - 1, 3] = float("nan")
            programs = programs_run(compiled, x)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4, equal_nan=True)
            assert compiled(x)[rows - 1].isnan().all() and not compiled(x)[0].isnan().any()
            if host_isa() is None:
                continue
            (conv,) = [s.kernel for p in programs for s in p.steps
                       if isinstance(s, Launch) and isinstance(s.kernel, SizedConv)]
            chosen = conv._sized((1, 1280, 1, rows)).kernel
            assert isinstance(chosen, _LibraryLaunch) == (rows == 8), chosen
