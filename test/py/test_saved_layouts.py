"""Saved activations in the layout the forward computes them (``compiler/saved_layouts.py``,
``passes/free_result_layouts.py``): a training forward returns what its backward reads
channels-last where its convs compute so, AOTAutograd compiles the backward for those
strides, and every gradient still matches eager's."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.fx
from conftest import needs_avx2
from torch._subclasses.fake_tensor import FakeTensorMode

from tessera.compiler.saved_layouts import retrace_for_inputs

aten = torch.ops.aten


class _ConvNet(torch.nn.Module):
    """Two conv/BatchNorm blocks, a flatten by ``view`` (which a channels-last saved
    activation does not allow as a view) and a linear layer."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.SiLU(),
            torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.SiLU())
        self.head = torch.nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        y = self.body(x)
        return self.head(y.view(y.shape[0], -1))


def _saved_strides(model, x) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (shape, strides) of each 4-d tensor the forward saves for backward."""
    seen = []

    def pack(t):
        if t.dim() == 4:
            seen.append((tuple(t.shape), t.stride()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    out.square().mean().backward()
    return seen


@needs_avx2
def test_a_conv_nets_saved_activations_are_channels_last_and_its_gradients_right():
    torch.manual_seed(0)
    model = _ConvNet()
    eager = copy.deepcopy(model)
    x = torch.randn(4, 8, 8, 8)
    compiled = torch.compile(model, backend="tessera", options={"strict": True})
    saved = _saved_strides(compiled, x)
    channels_last = [s for shape, s in saved if shape[1] == 32 and s == (2048, 1, 256, 32)]
    assert channels_last, f"no saved activation channels-last: {saved}"
    eager(x).square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


@needs_avx2
def test_without_the_pass_the_saved_activations_keep_eagers_strides():
    torch.manual_seed(0)
    model = _ConvNet()
    x = torch.randn(4, 8, 8, 8)
    compiled = torch.compile(model, backend="tessera", options={"strict": True, "disable": ("free-result-layouts",)})
    saved = _saved_strides(compiled, x)
    assert saved and all(s == torch.empty(shape).stride() for shape, s in saved), saved


@needs_avx2
def test_an_inference_graph_returns_eagers_strides():
    torch.manual_seed(0)
    model = _ConvNet().eval()
    x = torch.randn(4, 8, 8, 8)
    compiled = torch.compile(model.body, backend="tessera", options={"strict": True})
    with torch.no_grad():
        out = compiled(x)
        torch.testing.assert_close(out, model.body(x), rtol=1e-4, atol=1e-5)
    assert out.stride() == model.body(x).stride()


def _graph(target, *args) -> torch.fx.GraphModule:
    """``target(x, *args)`` of one placeholder ``x`` of 2x3x4x4 traced contiguous."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    out = g.call_function(target, (x, *args))
    g.output((out,))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    with FakeTensorMode() as mode:
        x.meta["val"] = torch.empty(2, 3, 4, 4)
    gm.meta["mode"] = mode
    return gm


def _retraced(gm: torch.fx.GraphModule, real: torch.Tensor) -> torch.fx.GraphModule:
    mode = gm.meta["mode"]
    fake = mode.from_tensor(real)
    retrace_for_inputs(gm, [fake])
    return gm


@pytest.mark.parametrize("target", [aten.view.default, aten._unsafe_view.default])
def test_a_view_of_a_restrided_input_becomes_a_reshape(target):
    gm = _graph(target, [2, 48])
    x = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    _retraced(gm, x)
    out = gm(x)[0]
    torch.testing.assert_close(out, x.contiguous().view(2, 48))
    out_node = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert out_node.target is aten.reshape.default


def test_a_graph_that_reads_strides_gets_the_input_copied_back():
    """``as_strided`` reads memory, not values: the input is copied into the strides it was traced with."""
    gm = _graph(aten.as_strided.default, [2, 3, 4], [48, 16, 1])
    x = torch.randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    _retraced(gm, x)
    torch.testing.assert_close(gm(x)[0], x.contiguous().as_strided([2, 3, 4], [48, 16, 1]))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.copy.default in targets


def test_inputs_of_the_traced_strides_leave_the_graph_as_it_is():
    gm = _graph(aten.view.default, [2, 48])
    code = gm.code
    _retraced(gm, torch.randn(2, 3, 4, 4))
    assert gm.code == code


@needs_avx2
def test_a_forward_that_falls_back_while_running_still_feeds_its_backward(monkeypatch):
    """A forward program that fails while running gives eager's outputs, with eager's
    strides; the backward compiled for channels-last saved activations takes them
    (copied into its layouts) and the gradients are still eager's."""
    from tessera.compiler.host_steps import HostProgram

    torch.manual_seed(0)
    model = _ConvNet()
    eager = copy.deepcopy(model)
    x = torch.randn(4, 8, 8, 8)
    compiled = torch.compile(model, backend="tessera")
    compiled(x).square().mean().backward()  # compiled both graphs, saved activations channels-last
    model.zero_grad()
    real = HostProgram.__call__

    def forward_fails(self, *tensors):
        if self.report.kind == "forward":
            raise RuntimeError("a kernel failed")
        return real(self, *tensors)

    monkeypatch.setattr(HostProgram, "__call__", forward_fails)
    saved = _saved_strides(compiled, x)
    assert saved and all(s == torch.empty(shape).stride() for shape, s in saved), saved
    eager(x).square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


@needs_avx2
def test_a_forward_of_dynamic_sizes_saves_channels_last_and_its_backward_takes_them():
    """Of symbolic sizes the forward notes each saved output's dim order on its fake
    tensor, and the backward is traced for it: one compile serves both sizes."""
    from tessera.compiler.report import collect_reports

    torch.manual_seed(0)
    body = _ConvNet().body
    model = torch.nn.Sequential(body, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True})
    with collect_reports() as reports:
        for shape in [(4, 8, 8, 8), (2, 8, 12, 12)]:
            x = torch.randn(shape)
            model.zero_grad()
            eager.zero_grad()
            saved = _saved_strides(compiled, x)
            n, _, h, w = shape
            assert (32 * h * w, 1, 32 * w, 32) in [s for _, s in saved], saved
            eager(x).square().mean().backward()
            floor = 1e-3 * max(q.grad.abs().max().item() for q in eager.parameters())
            for (name, p), q in zip(model.named_parameters(), eager.parameters()):
                scale = max(q.grad.abs().max().item(), floor)
                assert (p.grad - q.grad).abs().max().item() <= 1e-3 * scale, name
    assert all(r.dynamic for r in reports), [r.summary() for r in reports]
