"""The input gradient of a stride-1 3x3 conv traced as a conv (``compiler/conv_backward.py``):
the decomposition against ATen's own backward, the class it takes, and a compiled
training step whose input gradient runs on tessera's Winograd kernels."""

from __future__ import annotations

import pytest
import torch
from conftest import needs_avx2
from program_capture import programs_run

from tessera.compiler.conv_backward import convolution_backward, takes

aten = torch.ops.aten


def _args(w, padding, mask):
    return ([w.shape[0]], [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1, mask)


@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [True, True, False]])
def test_decomposition_matches_aten(padding, mask):
    torch.manual_seed(0)
    x, w = torch.randn(2, 64, 23, 21, dtype=torch.float64), torch.randn(72, 64, 3, 3, dtype=torch.float64)
    dy = torch.randn(2, 72, 21 + 2 * padding, 19 + 2 * padding, dtype=torch.float64)
    assert takes(x, w, [1, 1], [padding] * 2, [1, 1], False, 1, mask)
    want = aten.convolution_backward.default(dy, x, w, *_args(w, padding, mask))
    got = convolution_backward(dy, x, w, *_args(w, padding, mask))
    for g, e, wanted in zip(got, want, mask, strict=True):
        assert (g is None) == (not wanted)
        if wanted:
            torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("change", [
    dict(shape=(1, 64, 8, 8)),  # 4 tiles: too few to pay for the weight's transform
    dict(weight=(32, 64, 3, 3)),  # 32 output channels
    dict(weight=(64, 64, 5, 5)),  # 5x5
    dict(stride=[2, 2]),
    dict(padding=[3, 3]),
    dict(groups=2, weight=(64, 32, 3, 3)),
    dict(mask=[False, True, True]),  # no input gradient asked
])
def test_takes_only_the_winograd_class(change):
    base = dict(shape=(1, 64, 24, 24), weight=(64, 64, 3, 3), stride=[1, 1], padding=[1, 1], groups=1,
                mask=[True, True, True])

    def ask(c):
        return takes(torch.empty(c["shape"]), torch.empty(c["weight"]), c["stride"], c["padding"], [1, 1], False,
                     c["groups"], c["mask"])
    assert ask(base)
    assert not ask({**base, **change})


class _Pair(torch.nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


@needs_avx2
def test_training_step_computes_input_gradients_by_winograd():
    """Batch 4 at 16x16 (64 tiles), channels-last: both input gradients (of ``x`` and of
    ``relu(c1(x))``) are convs on Winograd's kernels; every gradient is eager's."""
    from tessera.compiler.targets.x86.conv.winograd import WinogradConv
    from tessera.runtime.program import Launch

    torch.manual_seed(0)
    model = _Pair(64)
    compiled = torch.compile(model, backend="tessera")
    x = torch.randn(4, 64, 16, 16).contiguous(memory_format=torch.channels_last).requires_grad_()
    x_eager = x.detach().clone().requires_grad_()
    want = model(x_eager)
    want.square().mean().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)

    programs = programs_run(lambda t: compiled(t).square().mean().backward(), x)
    for got, expected in zip([*(p.grad for p in model.parameters()), x.grad], [*grads, x_eager.grad], strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item())
    backward = programs[-1]
    assert sum(isinstance(s, Launch) and isinstance(s.kernel, WinogradConv) for s in backward.steps) == 2


@needs_avx2
def test_dynamic_training_computes_input_gradients_per_size():
    """``dynamic=True``: the input gradients are convs of dynamic sizes (``SizedWinograd``),
    which choose per size: Winograd at 84 and 72 tiles, the library's conv at 27; one
    backward graph for the three sizes, every gradient eager's."""
    from tessera.compiler.targets.x86.conv.sized import SizedWinograd
    from tessera.runtime.program import Launch

    torch.manual_seed(0)
    model = _Pair(64)
    compiled = torch.compile(model, backend="tessera", dynamic=True)
    backwards = set()
    for shape in [(2, 64, 24, 26), (3, 64, 9, 10), (4, 64, 20, 21)]:
        x = torch.randn(shape).requires_grad_()
        x_eager = x.detach().clone().requires_grad_()
        model(x_eager).square().mean().backward()
        want = [*(p.grad.clone() for p in model.parameters()), x_eager.grad]
        model.zero_grad(set_to_none=True)
        backward = programs_run(lambda t: compiled(t).square().mean().backward(), x)[-1]
        for got, expected in zip([*(p.grad for p in model.parameters()), x.grad], want, strict=True):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item())
        model.zero_grad(set_to_none=True)
        assert sum(isinstance(s, Launch) and isinstance(s.kernel, SizedWinograd) for s in backward.steps) == 2
        backwards.add(id(backward))
    assert len(backwards) == 1
