"""``widen-half``: bf16/f16 convs and GEMMs computed in f32 where the target says
that is faster, checked by the interpreter and end to end against float64."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from tessera.compiler import targets
from tessera.compiler.backend import BackendOptions
from tessera.compiler.report import collect_reports

from pass_testing import check_pass, parse

CHAIN = """
func.func @forward(%x: tensor<1x4x8x8xbf16>, %w: tensor<4x4x3x3xbf16>, %s: tensor<4x1x1xf32>) -> tensor<1x4x8x8xbf16> {
  %y = tsr.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  %m = tsr.mul %y, %s : (tensor<1x4x8x8xbf16>, tensor<4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %mb = tsr.convert %m : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xbf16>
  %r = tsr.relu %mb : (tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %z = tsr.conv %r, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x8x8xbf16>, tensor<4x4x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  %a = tsr.add %z, %r : (tensor<1x4x8x8xbf16>, tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  %p = tsr.mean %a {dims = array<i64: 2, 3>, keepdim = false} : (tensor<1x4x8x8xbf16>) -> tensor<1x4xbf16>
  %o = tsr.reshape %p : (tensor<1x4xbf16>) -> tensor<1x4x1x1xbf16>
  %e = tsr.expand %o : (tensor<1x4x1x1xbf16>) -> tensor<1x4x8x8xbf16>
  %q = tsr.mul %a, %e : (tensor<1x4x8x8xbf16>, tensor<1x4x8x8xbf16>) -> tensor<1x4x8x8xbf16>
  func.return %q : tensor<1x4x8x8xbf16>
}
"""


def test_interpreter_agrees_and_only_f32_between():
    """The widened module computes what the bf16 one does, within bf16's rounding,
    and every op but the input widenings and the final rounding is f32."""
    after = check_pass(parse(CHAIN), 'widen-half{dtypes="bf16"},dce', rtol=2e-2)
    ops = [op for op in after.walk() if op.name.startswith("tsr.")]
    bf16_results = [op for op in ops if "bf16" in str(op.results[0].type)]
    assert [op.name for op in bf16_results] == ["tsr.convert"]  # the return's rounding
    assert sum(op.name == "tsr.conv" for op in ops) == 2 and all("f32" in str(op.results[0].type) for op in ops
                                                                    if op.name != "tsr.convert")


def test_f16_left_alone_when_not_asked():
    from tessera.compiler.ir_io import print_module

    module = parse(CHAIN.replace("bf16", "f16"))
    assert print_module(check_pass(module, 'widen-half{dtypes="bf16"}')) == print_module(module)


def test_bad_dtype_option():
    from tessera.compiler.errors import UnknownPassError
    from tessera.compiler.pass_pipeline import build_pipeline

    with pytest.raises(UnknownPassError, match="dtypes takes bf16, f16"):
        build_pipeline('widen-half{dtypes="f8"}')


@pytest.mark.parametrize("features, widened", [
    ("+avx512f,+avx512bf16,+avx512fp16", ("bf16", "f16")),  # an Intel core without AMX
    ("+avx512f,+avx512bf16,+amx-bf16,+amx-fp16", ()),  # AMX computes both faster
    ("+avx512f,+avx512bf16,+sse4a", ("f16",)),  # an AMD core with AVX-512 BF16
    ("+avx2,+fma", ("bf16", "f16")),
])
def test_x86_decides_by_features(features, widened):
    x86 = targets.get("x86")
    assert x86.widened_halves(features) == widened
    pipeline = x86.graph_pipeline(True, features)
    assert any(p.startswith("widen-half") for p in pipeline) == bool(widened)


def test_can_be_disabled():
    assert not any(p.startswith("widen-half") for p in BackendOptions(disable=("widen-half",)).pipeline())


class Net(nn.Module):
    """A stem, a BatchNorm'd conv with a residual, a pooled linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.stem(x))
        y = torch.relu(self.bn(self.conv(y))) + y
        return self.fc(y.mean((2, 3)))


def _net():
    torch.manual_seed(0)
    model = Net().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model


@pytest.mark.skipif("bf16" not in targets.get("x86").widened_halves(), reason="this CPU computes bf16 natively")
@pytest.mark.parametrize("freezing", [True, False])
def test_bf16_network_closer_to_float64_than_eager(freezing, capsys):
    """Every conv computes in f32, and with freezing the linear too, on tessera's
    kernels; the result is bf16, and nearer float64's than eager's bf16, whose roundings it skips."""
    model = _net()
    x = torch.randn(2, 3, 32, 32)
    ref = copy.deepcopy(model).double()(x.double())
    half = copy.deepcopy(model).to(torch.bfloat16)
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        got = torch.compile(half, backend="tessera", options={"freezing": freezing, "print_ir": True})(x.bfloat16())
        eager = half(x.bfloat16())
    assert got.dtype == torch.bfloat16 and type(got) is torch.Tensor
    (report,) = reports
    assert report.compiled and not report.aten_ops, report.summary()
    printed = capsys.readouterr().out.splitlines()
    convs, linears = ([line for line in printed if f"tsr.{op} " in line] for op in ("conv", "addmm"))
    assert len(convs) == 2 and not any("bf16" in line for line in convs)
    assert len(linears) == 1 and ("bf16" in linears[0]) != freezing  # without freezing GEMMs stay bf16
    if freezing:
        assert report.conv_kernels == 3, report.summary()  # the linear too (addmm-as-conv)
    err = lambda t: ((t.double() - ref).abs().max() / ref.abs().max()).item()  # noqa: E731
    assert err(got) < 8e-3  # the bf16 input and output roundings
    assert err(got) <= err(eager) * 1.05


@pytest.mark.skipif("bf16" not in targets.get("x86").widened_halves(), reason="this CPU computes bf16 natively")
def test_bf16_nan_stays_nan():
    model = _net().to(torch.bfloat16)
    x = torch.randn(2, 3, 32, 32, dtype=torch.bfloat16)
    x[1, 0, 5, 5] = float("nan")
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(model, backend="tessera", options={"freezing": True})(x)
        want = model(x)
    assert torch.equal(got.isnan(), want.isnan()) and got[1].isnan().all() and not got[0].isnan().any()


@pytest.mark.skipif("bf16" not in targets.get("x86").widened_halves(), reason="this CPU computes bf16 natively")
def test_autocast_rounds_operands_as_eager():
    """Under ``torch.autocast`` an f32 model's conv and linear operands are rounded to
    bf16 on purpose: they stay rounded (the error is eager's), the math runs in f32."""
    model = _net()
    x = torch.randn(2, 3, 32, 32)
    ref = copy.deepcopy(model).double()(x.double())
    torch._dynamo.reset()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), collect_reports() as reports:
        got = torch.compile(model, backend="tessera", options={"freezing": True})(x)
        eager = model(x)
    assert got.dtype == eager.dtype == torch.bfloat16
    assert reports[0].compiled and reports[0].conv_kernels == 3, reports[0].summary()
    err = lambda t: ((t.double() - ref).abs().max() / ref.abs().max()).item()  # noqa: E731
    assert err(eager) * 0.5 < err(got) <= err(eager) * 1.5


class Conv1D(nn.Module):
    """GPT-2's linear layer: ``addmm(b, x, w)`` with ``w`` stored ``[K, N]``."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) * 0.05)
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


@pytest.mark.skipif("bf16" not in targets.get("x86").widened_halves(), reason="this CPU computes bf16 natively")
def test_bf16_conv1d_weight_widened_once():
    """The widened ``[K, N]`` weight is still a weight of the graph's arguments alone:
    with freezing the linear runs on tessera's kernel, the transpose made once (it
    had stayed an f32 GEMM fed by a copy of every weight on every call)."""
    torch.manual_seed(0)
    model = Conv1D(96, 64).eval()
    x = torch.randn(1, 32, 96)
    ref = copy.deepcopy(model).double()(x.double())
    half = model.to(torch.bfloat16)
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        got = torch.compile(half, backend="tessera", options={"freezing": True})(x.bfloat16())
        eager = half(x.bfloat16())
    assert reports[0].conv_kernels == 1 and not reports[0].library, reports[0].summary()
    err = lambda t: ((t.double() - ref).abs().max() / ref.abs().max()).item()  # noqa: E731
    assert err(got) <= err(eager) * 1.05
