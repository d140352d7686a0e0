"""The conv backward as tessera traces it (``compiler/conv_backward.py``): the decomposition
against ATen's own backward, a compiled training step whose input gradients run on tessera's
Winograd kernels (its weight read flipped, never copied); a 1x1 conv's backward as GEMMs; a
depthwise weight gradient on a tiny plane tap by tap."""

from __future__ import annotations

import pytest
import torch
from conftest import needs_avx2
from program_capture import programs_run

from conv_backward_checks import assert_backward_matches_aten

from tessera.compiler import depthwise_backward as depthwise
from tessera.compiler.conv_backward import convolution_backward, pointwise_takes

aten = torch.ops.aten


def _args(w, padding, mask):
    return ([w.shape[0]], [1, 1], [padding] * 2, [1, 1], False, [0, 0], 1, mask)


@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [True, True, False]])
def test_decomposition_matches_aten(padding, mask):
    """float32, 72 tiles of 4x4: the input gradient by Winograd where the host's rule gives it
    (its weight read flipped), against ATen's backward in float64."""
    torch.manual_seed(0)
    x, w = torch.randn(2, 64, 23, 21), torch.randn(72, 64, 3, 3)
    dy = torch.randn(2, 72, 21 + 2 * padding, 19 + 2 * padding)
    want = aten.convolution_backward.default(dy.double(), x.double(), w.double(), *_args(w, padding, mask))
    got = convolution_backward(dy, x, w, *_args(w, padding, mask))
    for g, e, wanted in zip(got, want, mask, strict=True):
        assert (g is None) == (not wanted)
        if wanted:
            torch.testing.assert_close(g.double(), e, rtol=0, atol=2e-5 * e.abs().max().item())


class _Pair(torch.nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.c2(torch.relu(self.c1(x)))


@needs_avx2
def test_training_step_computes_input_gradients_by_winograd(winograd_launches):
    """Batch 4 at 16x16 (64 tiles), channels-last: both input gradients (of ``x`` and of
    ``relu(c1(x))``) run on Winograd's kernels, and no flip of the weight is computed (the
    transform reads it flipped); every gradient is eager's."""
    from tessera.runtime.program import Call

    torch.manual_seed(0)
    model = _Pair(64)
    compiled = torch.compile(model, backend="tessera")
    x = torch.randn(4, 64, 16, 16).contiguous(memory_format=torch.channels_last).requires_grad_()
    x_eager = x.detach().clone().requires_grad_()
    want = model(x_eager)
    want.square().mean().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)

    compiled(x).square().mean().backward()  # compiled; Winograd's forward convs counted below
    model.zero_grad(set_to_none=True)
    x.grad = None
    winograd_launches.clear()
    programs = programs_run(lambda t: compiled(t).square().mean().backward(), x)
    for got, expected in zip([*(p.grad for p in model.parameters()), x.grad], [*grads, x_eager.grad], strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item())
    forward_winograd = sum("winograd" in getattr(s.kernel, "name", "") for s in programs[0].steps if hasattr(s, "kernel"))
    assert len(winograd_launches) == forward_winograd + 2
    backward = programs[-1]
    callees = [getattr(getattr(s.fn, "fn", None), "callee", "") for s in backward.steps if isinstance(s, Call)]
    assert "tessera.conv_input_grad.default" in callees and not any("rev" in c or "flip" in c for c in callees)


@needs_avx2
def test_dynamic_training_computes_input_gradients_per_size(winograd_launches):
    """``dynamic=True``: the input gradients are ``tessera.conv_input_grad``, which chooses
    per size: Winograd of the flipped weight at 84 and 120 tiles, the direct kernel reading
    it flipped at 27; one backward graph for the three sizes, every gradient eager's."""
    torch.manual_seed(0)
    model = _Pair(64)
    compiled = torch.compile(model, backend="tessera", dynamic=True)
    backwards = set()
    for shape, winograd in [((2, 64, 24, 26), 2), ((3, 64, 9, 10), 0), ((4, 64, 20, 21), 2)]:
        x = torch.randn(shape).requires_grad_()
        x_eager = x.detach().clone().requires_grad_()
        model(x_eager).square().mean().backward()
        want = [*(p.grad.clone() for p in model.parameters()), x_eager.grad]
        model.zero_grad(set_to_none=True)
        winograd_launches.clear()
        backward = programs_run(lambda t: compiled(t).square().mean().backward(), x)[-1]
        for got, expected in zip([*(p.grad for p in model.parameters()), x.grad], want, strict=True):
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4 * expected.abs().max().item())
        model.zero_grad(set_to_none=True)
        assert len(winograd_launches) == winograd, (shape, winograd_launches)
        backwards.add(id(backward))
    assert len(backwards) == 1


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("mask", [[True, True, True], [True, False, False], [False, True, False]])
@pytest.mark.parametrize("shape", [(2, 24, 5, 7), (1, 8, 2, 3, 4)])
def test_a_1x1_convs_backward_is_two_gemms(layout, mask, shape):
    """``pointwise_backward``: dx = dy @ w and dw = dy^T @ x over rows of pixels; dx
    comes channels-last whatever the layout (as the GEMM writes it)."""
    torch.manual_seed(0)
    spatial = len(shape) - 2
    x, w = torch.randn(shape), torch.randn(40, shape[1], *[1] * spatial)
    dy = torch.randn(shape[0], 40, *shape[2:])
    if spatial == 2:
        x, dy = x.contiguous(memory_format=layout), dy.contiguous(memory_format=layout)
    args = ([40], [1] * spatial, [0] * spatial, [1] * spatial, False, [0] * spatial, 1, mask)
    assert pointwise_takes(x, w, args[1], args[2], False, 1)
    assert_backward_matches_aten(dy, x, w, args, same_strides=False)


@pytest.mark.parametrize("change", [dict(stride=[2, 2]), dict(padding=[1, 1]), dict(groups=2),
                                    dict(weight=(40, 24, 3, 3)), dict(dtype=torch.float64)])
def test_only_unstrided_unpadded_dense_1x1_convs_are_gemms(change):
    c = {**dict(weight=(40, 24, 1, 1), stride=[1, 1], padding=[0, 0], groups=1, dtype=torch.float32), **change}
    x = torch.empty(2, 24, 5, 5, dtype=c["dtype"])
    w = torch.empty(c["weight"][0], c["weight"][1] // c["groups"], *c["weight"][2:], dtype=c["dtype"])
    assert not pointwise_takes(x, w, c["stride"], c["padding"], False, c["groups"])


@pytest.mark.parametrize("case", [  # channels, plane, kernel, stride, padding, dilation
    (96, (2, 2), 3, 1, 1, 1), (16, (1, 1), 3, 1, 1, 1), (8, (2, 3), 5, 2, 2, 1), (8, (2, 2), 3, 1, 2, 2),
    (32, (9, 7), 5, 1, 2, 1), (16, (11, 11), 5, 2, 2, 1), (16, (12, 12), 7, 1, 3, 1)])  # windows over 3x3
def test_a_depthwise_backwardient_on_a_small_plane_or_of_a_large_window_is_summed_tap_by_tap(case):
    c, plane, k, s, p, d = case
    torch.manual_seed(0)
    x, w = torch.randn(2, c, *plane), torch.randn(c, 1, k, k)
    out = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n in plane]
    dy = torch.randn(2, c, *out)
    mask = [True, True, True]
    assert depthwise.takes(x, w, False, c, mask)
    assert_backward_matches_aten(dy, x, w, ([c], [s, s], [p, p], [d, d], False, [0, 0], c, mask))


def test_a_3x3_depthwise_backwardient_on_a_plane_as_large_as_its_window_stays_the_librarys():
    x, w = torch.empty(2, 16, 3, 3), torch.empty(16, 1, 3, 3)
    assert not depthwise.takes(x, w, False, 16, [True, True, True])
    assert not depthwise.takes(torch.empty(2, 16, 2, 2), torch.empty(32, 1, 3, 3), False, 16, [True, True, True])


def _symbolic(shape):
    """A fake tensor of ``shape`` whose batch and plane sizes are symbolic."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    mode = FakeTensorMode(shape_env=ShapeEnv())
    dims = [DimDynamic.DYNAMIC, DimDynamic.STATIC] + [DimDynamic.DYNAMIC] * (len(shape) - 2)
    return mode.from_tensor(torch.empty(shape), symbolic_context=StatelessSymbolicContext(dynamic_sizes=dims))


@pytest.mark.parametrize("channels", [64, 256])
def test_at_symbolic_sizes_a_large_weight_is_packed_flipped_not_flipped_per_call(channels):
    """``conv_input_grad`` takes every size of weight at symbolic sizes (choosing Winograd
    per size when run)."""
    from tessera.compiler.conv_input_grad import takes as input_grad_takes

    x, w = _symbolic((2, channels, 16, 16)), torch.empty(channels, channels, 3, 3)
    args = ([1, 1], [1, 1], [1, 1], False, 1, [True, True, True])
    assert input_grad_takes(x, w, *args)


def test_at_symbolic_sizes_a_depthwise_backwardient_chooses_taps_when_run():
    """Of a symbolic plane the traced op is ``tessera.depthwise_backward``, which sums the
    weight gradient tap by tap where the plane it runs at is smaller than the window and
    calls ATen for both gradients elsewhere: each equal to ATen's, in the layout traced."""
    x, w = _symbolic((2, 16, 2, 2)), torch.empty(16, 1, 3, 3)
    assert depthwise.takes(x, w, False, 16, [True, True, True])
    grad = depthwise._depthwise_backward
    torch.manual_seed(0)
    for plane, stride in (((2, 2), 1), ((1, 3), 1), ((6, 5), 1), ((7, 7), 2)):
        x, w = torch.randn(2, 16, *plane, dtype=torch.float64), torch.randn(16, 1, 3, 3, dtype=torch.float64)
        x = x.contiguous(memory_format=torch.channels_last)
        dy = torch.randn(2, 16, *[(n + 2 - 3) // stride + 1 for n in plane], dtype=torch.float64)
        want_x, want_w, _ = aten.convolution_backward.default(dy, x, w, None, [stride] * 2, [1, 1], [1, 1], False,
                                                              [0, 0], 16, [True, True, False])
        for channels_last in (False, True):
            got_x, got_w = grad(dy, x, w, [stride] * 2, [1, 1], [1, 1], True, channels_last)
            torch.testing.assert_close(got_w, want_w, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(got_x, want_x, rtol=1e-12, atol=1e-12)
            assert got_x.stride() == want_x.stride()
            assert got_w.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
        assert grad(dy, x, w, [stride] * 2, [1, 1], [1, 1], False, False)[0].numel() == 0


def _callees(program) -> list[str | None]:
    return [getattr(getattr(s.fn, "fn", None), "callee", None) for s in program.steps if hasattr(s, "fn")]


class _Depthwise(torch.nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1, groups=c)

    def forward(self, x):
        return torch.relu(self.conv(x))


def test_a_dynamic_training_step_gives_eagers_depthwise_backwardients_at_every_plane():
    """``dynamic=True``: one compile of a depthwise conv's backward, called at planes smaller
    than its window (taps, a program compiled for the size) and larger (ATen's call), each
    weight gradient eager's."""
    from tessera.compiler.host_steps import AtenCall

    torch.manual_seed(0)
    model = _Depthwise(24)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True})
    backwards = set()
    for shape in ((4, 24, 2, 3), (3, 24, 9, 7), (5, 24, 2, 2)):
        x = torch.randn(shape)
        model.zero_grad()
        programs = programs_run(lambda t: compiled(t).square().sum().backward(), x)
        got = model.conv.weight.grad.clone()
        model.zero_grad()
        model(x).square().sum().backward()
        torch.testing.assert_close(got, model.conv.weight.grad, rtol=1e-4, atol=1e-5)
        (backward,) = [p for p in programs if "tessera.depthwise_backward.default" in _callees(p)]
        backwards.add(id(backward))
        small = shape[2] < 3 or shape[3] < 3
        assert len(programs) == (3 if small else 2)  # the taps compiled for the size the op runs at
    assert len(backwards) == 1


def _matches_eager(model: _Depthwise, x: torch.Tensor) -> None:
    """The weight's and input's gradients a compiled step left equal eager's."""
    got, got_x = model.conv.weight.grad.clone(), x.grad.clone()
    model.zero_grad()
    x.grad = None
    model(x).square().sum().backward()
    torch.testing.assert_close(got, model.conv.weight.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got_x, x.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_a_dynamic_training_step_traces_a_5x5_depthwise_weight_gradient_tap_by_tap(stride):
    """``dynamic=True``, a 5x5 window at stride 1 or 2: the taps are traced into the backward
    at symbolic sizes (no ``tessera.depthwise_backward``, no program per size), each window a
    slice by the stride that ends a fixed count before the padded input's end (its size
    ``ceil((n + 2p - 4) / s)``, odd planes included); eager's gradients at planes smaller
    and larger than the window."""
    torch.manual_seed(0)
    model = _Depthwise(32)
    model.conv = torch.nn.Conv2d(32, 32, 5, stride=stride, padding=2, groups=32)
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True})
    for shape in ((2, 32, 9, 7), (3, 32, 2, 3), (1, 32, 12, 12)):
        x = torch.randn(shape).to(memory_format=torch.channels_last).requires_grad_()
        model.zero_grad()
        programs = programs_run(lambda t: compiled(t).square().sum().backward(), x)
        _matches_eager(model, x)
        assert len(programs) == 2  # the forward and the backward: nothing compiled per size
        calls = [c for p in programs for c in _callees(p)]
        assert "tessera.depthwise_backward.default" not in calls
        assert "aten.convolution_backward.default" in calls  # the input's gradient


def test_a_static_training_step_sums_a_5x5_depthwise_weight_gradient_in_a_kernel():
    """A 5x5 depthwise conv at a plane larger than its window: its weight gradient is
    compiled tap by tap (no library call computes it), equal to eager's."""
    torch.manual_seed(0)
    model = _Depthwise(32)
    model.conv = torch.nn.Conv2d(32, 32, 5, padding=2, groups=32)
    compiled = torch.compile(model, backend="tessera", options={"strict": True})
    x = torch.randn(2, 32, 9, 9).to(memory_format=torch.channels_last).requires_grad_()
    backward = programs_run(lambda t: compiled(t).square().sum().backward(), x)[-1]
    _matches_eager(model, x)
    calls = [getattr(s.fn, "fn", None) for s in backward.steps if hasattr(s, "fn")]
    masks = [c.args[-1] for c in calls if getattr(c, "callee", None) == "aten.convolution_backward.default"]
    assert masks == [[True, False, False]], masks  # the input's gradient only
