"""Pooling compiled as window slices (``compiler/fx_import/pooling.py``): max and
average pools of every argument ATen takes match eager bit for bit (the sums run
in ATen's order, divided by ATen's divisor), NaN included, with nothing left to
ATen, and so do a max pool's indices where backward reads them; what has no such
form (symbolic sizes) stays ATen's call and still
gives eager's answer."""

from __future__ import annotations

import copy
import itertools

import pytest
import torch
import torch.nn.functional as F

from tessera.compiler.report import collect_reports

POOL_ARGS = [(k, s, p, ceil) for k, s, p, ceil in itertools.product((2, 3), (1, 2, 3), (0, 1), (False, True))
             if p <= k // 2]


def _compiled(fn, x, **options):
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        got = torch.compile(fn, backend="tessera", options={"strict": True, **options})(x)
    return got, sorted({k for r in reports for k in r.aten_ops})


def _exact(got: torch.Tensor, want: torch.Tensor) -> None:
    assert type(got) is torch.Tensor and got.shape == want.shape and got.dtype == want.dtype
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(want)), (got - want).abs().max()


def _input(shape, dtype=torch.float32) -> torch.Tensor:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dtype)
    x.view(-1)[5] = float("nan")  # NaN stays NaN through the window
    return x


@pytest.mark.parametrize("k, s, p, ceil", POOL_ARGS)
def test_max_pool_2d_exact(k, s, p, ceil):
    fn = lambda x: F.max_pool2d(x, k, s, p, 1, ceil)  # noqa: E731
    x = _input((2, 3, 9, 10))
    got, aten = _compiled(fn, x)
    assert aten == []
    _exact(got, fn(x))


@pytest.mark.parametrize("k, s, p, ceil", POOL_ARGS)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_2d_exact(k, s, p, ceil, count_include_pad):
    fn = lambda x: F.avg_pool2d(x, k, s, p, ceil, count_include_pad)  # noqa: E731
    x = _input((2, 3, 9, 10))
    got, aten = _compiled(fn, x)
    assert aten == []
    _exact(got, fn(x))


@pytest.mark.parametrize("fn, shape", [
    (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True), (1, 4, 11, 12)),
    (lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 0)), (1, 4, 8, 9)),
    (lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True), (1, 4, 7, 9, 8)),
    (lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 4, 7, 9, 8)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5), (1, 4, 7, 9)),
    (lambda x: F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 3, 2, 1), (1, 8, 9, 9)),
    (lambda x: F.avg_pool2d(x.double(), 2), (1, 4, 7, 9)),
], ids=["dilated", "rectangular", "max3d", "avg3d", "divisor_override", "channels_last", "float64"])
def test_pool_variants_exact(fn, shape):
    x = _input(shape)
    got, aten = _compiled(fn, x)
    assert aten == []
    _exact(got, fn(x))


@pytest.mark.parametrize("fn, shape", [
    (lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), (2, 3, 9, 10)),
    (lambda x: F.max_pool2d(x, 2, 2, 0, ceil_mode=True, return_indices=True), (2, 3, 9, 10)),
    (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True, return_indices=True), (1, 4, 11, 12)),
    (lambda x: F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 3, 2, 1, return_indices=True),
     (1, 8, 9, 9)),
    (lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True, return_indices=True), (1, 4, 7, 9, 8)),
], ids=["3x3s2", "ceil", "dilated", "channels_last", "max3d"])
def test_max_pool_with_indices_exact(fn, shape):
    """Training reads the indices: the argmax is computed beside the max (ATen's rule:
    a later element wins when greater or NaN; an all -inf window keeps its first
    element inside the input), nothing left to ATen, and the gradient flows to the same places."""
    x = _input(shape)
    x.view(-1)[7] = float("-inf")
    x[0, 1] = float("-inf")  # whole windows of -inf, at the border too
    ours, theirs = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    torch._dynamo.reset()
    with collect_reports() as reports:
        got, at = torch.compile(fn, backend="tessera", options={"strict": True})(ours)
    want, want_at = fn(theirs)
    _exact(got, want)
    assert at.dtype == torch.int64 and torch.equal(at, want_at) and at.stride() == want_at.stride()
    forward = [r for r in reports if r.kind == "forward"]
    assert forward and all(not r.aten_ops for r in forward), [r.aten_ops for r in forward]
    g = torch.randn(got.shape, generator=torch.Generator().manual_seed(1))
    got.backward(g)
    want.backward(g)
    assert torch.equal(ours.grad, theirs.grad)


def test_max_pool_with_indices_of_a_dynamic_batch_compiles_once():
    """The argmax's types keep a symbolic batch symbolic: one forward graph serves
    every batch size (an int() of the size would have Dynamo recompile per batch)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1)).train()
    compiled = torch.compile(copy.deepcopy(model), backend="tessera", options={"strict": True})
    kinds = []
    for batch in (2, 3, 5):
        x = torch.randn(batch, 4, 12, 12)
        ours, theirs = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        torch._dynamo.mark_dynamic(ours, 0)
        with collect_reports() as reports:
            compiled(ours).square().sum().backward()
        model(theirs).square().sum().backward()
        torch.testing.assert_close(ours.grad, theirs.grad)
        kinds += [r.kind for r in reports]
        assert not any("max_pool2d_with_indices." in k for r in reports for k in r.aten_ops)
    assert kinds.count("forward") == 1, kinds


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_pools_compile_exact(dtype):
    """A max is exact in any dtype; a half average sums and divides in f32 and
    rounds once, as ATen does, border windows and ``ceil_mode`` included."""
    x = _input((1, 4, 9, 9), dtype)
    for fn in (lambda x: F.max_pool2d(x, 2), lambda x: F.avg_pool2d(x, 2),
               lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
               lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5)):
        got, aten = _compiled(fn, x)
        assert aten == []
        _exact(got, fn(x))


_DYNAMIC_POOLS = {
    "max 3x3 s2 p1 after a ReLU": (lambda x: F.max_pool2d(torch.relu(x), 3, 2, 1), True),
    "max 2x2": (lambda x: F.max_pool2d(x, 2), True),
    "max dilated": (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2), True),
    "avg 3x3 s2 p1": (lambda x: F.avg_pool2d(x, 3, 2, 1), True),
    "avg divisor_override": (lambda x: F.avg_pool2d(x, 3, 1, 1, divisor_override=5), True),
    "max ceil_mode": (lambda x: F.max_pool2d(x, 3, 2, 0, ceil_mode=True), False),
    "avg border windows": (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), False),
}


@pytest.mark.parametrize("name", list(_DYNAMIC_POOLS))
def test_pools_over_dynamic_sizes(name):
    """Over symbolic sizes a floor-mode pool is its window slices in one kernel (each
    slice sized ``ceil((n + 2p - d(k - 1)) / s)`` at run time); a ceil-mode pool of
    stride 2 (its last window comes and goes with the size) and an average whose
    border windows count fewer elements stay ATen's call. Exact at every size."""
    fn, compiles = _DYNAMIC_POOLS[name]
    compiled = torch.compile(fn, backend="tessera", dynamic=True, options={"strict": True})
    with torch.no_grad(), collect_reports() as reports:
        for shape in ((2, 4, 9, 9), (1, 4, 12, 7), (3, 4, 16, 10)):
            x = _input(shape)
            _exact(compiled(x), fn(x))
    assert reports and all(r.dynamic for r in reports), [r.summary() for r in reports]
    aten = [k for r in reports for k in r.aten_ops]
    assert (aten == []) == compiles, [r.summary() for r in reports]


def test_max_pool_with_indices_over_dynamic_sizes_runs_channels_last():
    """Training over symbolic planes: the pool with indices stays ATen's call, which
    ``assign-layouts`` gives a channels-last input (15x faster on a CPU); the input
    gradient is eager's at every size."""
    from tessera.compiler.host_steps import AtenCall
    from tessera.runtime.program import Program

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1)).train()
    compiled = torch.compile(copy.deepcopy(model), backend="tessera", dynamic=True, options={"strict": True})
    pools = []
    original = AtenCall.__call__

    def call(self, *operands):
        if "max_pool2d_with_indices" in self.callee:
            pools.append((self.callee, [t.is_contiguous(memory_format=torch.channels_last) for t in operands]))
        return original(self, *operands)

    AtenCall.__call__ = call
    try:
        for size in (12, 9, 16):
            x = torch.randn(2, 4, size, size)
            ours, theirs = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
            compiled(ours).square().sum().backward()
            model(theirs).square().sum().backward()
            torch.testing.assert_close(ours.grad, theirs.grad)
    finally:
        AtenCall.__call__ = original
    assert pools and {c for c, _ in pools} == {"aten.max_pool2d_with_indices.default"}  # the backward: a scatter
    assert all(all(layouts) for _, layouts in pools), pools


def test_pool_fuses_with_the_relu_before_it():
    """The ReLU and the pool's window become one kernel: no ATen call between them."""
    fn = lambda x: F.max_pool2d(torch.relu(x), 3, 2, 1)  # noqa: E731
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        torch.compile(fn, backend="tessera", options={"strict": True})(_input((1, 8, 16, 16)))
    (report,) = reports
    assert report.kernels == 1 and not report.aten_ops, report.summary()
