"""``compile_exported`` (``compiler/exported.py``): an exported program compiled
by tessera and called without Dynamo gives eager's answer, checks its inputs
against the exported signature, sees parameters changed in place, writes back
what the model writes, and falls back to torch.compile where export fails."""

from __future__ import annotations

import logging

import pytest
import torch
from torch.export import Dim

from tessera.compiler.exported import CompiledExport, InputMismatch, compile_exported
from tessera.compiler.report import COMPILED, collect_reports


class ConvBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y.mean((2, 3)))


def _block() -> ConvBlock:
    torch.manual_seed(0)
    model = ConvBlock()
    with torch.no_grad():  # BatchNorm statistics as a trained net's
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_matches_eager_and_runs_without_dynamo(monkeypatch):
    model, x = _block(), torch.randn(2, 3, 16, 16)
    with collect_reports() as reports:
        compiled = compile_exported(model, (x,))
    assert isinstance(compiled, CompiledExport)
    assert [r.status for r in reports] == [COMPILED] and reports[0].conv_kernels >= 1
    monkeypatch.setattr(torch._dynamo.eval_frame, "_callback_from_stance",
                        lambda *a, **k: pytest.fail("a call went through Dynamo"))
    for _ in range(3):  # the steady state (the straight-line runner) as well as the first call
        x = torch.randn(2, 3, 16, 16)
        got = compiled(x)
        assert type(got) is torch.Tensor and not got.requires_grad
        torch.testing.assert_close(got, model(x).detach(), rtol=1e-4, atol=1e-5)


def test_nan_stays_nan():
    model = _block()
    x = torch.randn(1, 3, 8, 8)
    compiled = compile_exported(model, (x,))
    x[0, 0, 2, 2] = float("nan")
    assert torch.isnan(compiled(x)).all()  # the mean over the plane carries it to every output


def test_inputs_checked_against_the_signature():
    compiled = compile_exported(_block(), (torch.randn(2, 3, 16, 16),))
    with pytest.raises(InputMismatch, match=r"input 0: expected a 2x3x16x16 torch.float32 tensor on cpu, got a 2x3x8x8"):
        compiled(torch.randn(2, 3, 8, 8))
    with pytest.raises(InputMismatch, match="torch.float64"):
        compiled(torch.randn(2, 3, 16, 16, dtype=torch.float64))
    with pytest.raises(InputMismatch, match="2 inputs"):
        compiled(torch.randn(2, 3, 16, 16), torch.randn(1))


def test_symbolic_sizes_one_compile():
    model = _block()
    batch, side = Dim("batch", min=1, max=16), Dim("side", min=4, max=64)
    with collect_reports() as reports:
        compiled = compile_exported(model, (torch.randn(2, 3, 16, 16),),
                                    dynamic_shapes=({0: batch, 2: side, 3: side},))
    for shape in ((1, 3, 8, 8), (3, 3, 16, 16), (2, 3, 24, 24)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), model(x).detach(), rtol=1e-4, atol=1e-5)
    assert [(r.status, r.dynamic) for r in reports] == [(COMPILED, True)]  # one program, sizes at run time
    with pytest.raises(InputMismatch, match="side|shape"):  # outside the exported range
        compiled(torch.randn(1, 3, 80, 80))


def test_parameters_changed_in_place_are_seen():
    model = _block()
    x = torch.randn(1, 3, 8, 8)
    compiled = compile_exported(model, (x,))
    before = compiled(x)
    with torch.no_grad():
        model.conv.weight.mul_(2.0)
        model.bn.running_mean.add_(0.25)
    after = compiled(x)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, model(x).detach(), rtol=1e-4, atol=1e-5)


def test_buffers_and_inputs_written_back():
    class Writes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(3))

        def forward(self, x):
            self.calls.add_(x.sum(0))
            x.mul_(2.0)
            return {"y": x + self.calls, "n": self.calls.sum()}

    model, eager = Writes(), Writes()
    x = torch.randn(4, 3)
    compiled = compile_exported(model, (x.clone(),))
    for _ in range(2):
        a, b = x.clone(), x.clone()
        got, want = compiled(a), eager(b)
        assert set(got) == {"y", "n"}
        torch.testing.assert_close(got["y"], want["y"])
        torch.testing.assert_close(got["n"], want["n"])
        torch.testing.assert_close(a, b)  # the input written as eager writes it
    torch.testing.assert_close(model.calls, eager.calls)


def test_keyword_arguments_and_an_exported_program():
    class Two(torch.nn.Module):
        def forward(self, x, *, scale):
            return torch.sigmoid(x) * scale, x - scale

    x, s = torch.randn(5, 7), torch.rand(5, 7)
    program = torch.export.export(Two(), (x,), {"scale": s})
    compiled = compile_exported(program)
    got = compiled(x, scale=s)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, Two()(x, scale=s)):
        torch.testing.assert_close(g, w)
    with pytest.raises(InputMismatch, match="structure"):
        compiled(x, s)


def test_falls_back_to_torch_compile_where_export_fails(caplog):
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # control flow on a value: torch.export cannot trace it, Dynamo breaks the graph
                return torch.relu(x) * 2
            return x - 1

    model = DataDependent()
    with caplog.at_level(logging.WARNING, logger="tessera"):
        compiled = compile_exported(model, (torch.ones(4),))
    assert not isinstance(compiled, CompiledExport)
    assert "compiled by torch.compile, not exported" in caplog.text
    for x in (torch.ones(4), -torch.ones(4)):
        torch.testing.assert_close(compiled(x), model(x))
