"""Code nobody here wrote, through ``torch.compile(backend="tessera")``: each
case once crashed the user's program, returned a wrong value or a FakeTensor.
Every compiled result is a real tensor equal to eager's; ``strict`` proves the
graph compiled rather than fell back."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.exc import BackendCompilerFailed
from torch._subclasses.fake_tensor import FakeTensor

from tessera.compiler.report import collect_reports

from conftest import REPO, assert_close

STRICT = {"strict": True}


def compiled_matches(fn, *args, options=STRICT, calls: int = 2, **close):
    """``fn(*args)`` compiled equals eager on ``calls`` calls; the outputs are real tensors."""
    compiled = torch.compile(fn, backend="tessera", options=options)
    expected = fn(*args)
    for _ in range(calls):
        got = compiled(*args)
        outs, refs = (got, expected) if isinstance(got, (tuple, list)) else ((got,), (expected,))
        for g, e in zip(outs, refs):
            assert type(g) is torch.Tensor and not isinstance(g, FakeTensor), type(g)
            assert g.dtype == e.dtype and g.shape == e.shape
            torch.testing.assert_close(g, e, equal_nan=True, **close)
    return compiled


# -- constants the host program builds: real tensors, not AOTAutograd's fakes --------
X = torch.randn(4, 8)
CONSTANT_CASES = {
    "where_scalar": lambda x: torch.where(x > 0, x, 0.0),
    "masked_fill_softmax": lambda x: x.masked_fill(x > 1, float("-inf")).softmax(-1),
    "nan_to_num": lambda x: torch.nan_to_num(x / 0.0),
    "tril": torch.tril,
    "zeros_like_plus": lambda x: torch.zeros_like(x) + x,
    "causal_mask": lambda x: x[:, :4] @ x[:, :4].t() + torch.full((4, 4), float("-inf")).triu(1),
}


@pytest.mark.parametrize("name", CONSTANT_CASES)
def test_constants_are_real_tensors(name):
    compiled_matches(CONSTANT_CASES[name], X)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_where_and_pad_with_scalar_fills(dtype):
    x = X.to(dtype)
    compiled_matches(lambda x: torch.where(x > 0, x, 0.5), x)
    compiled_matches(lambda x: F.pad(x, (1, 2), value=2.0) * 3, x)


FACTORY_CASES = {
    "ones_like": torch.ones_like,
    "full_like": lambda x: torch.full_like(x, 3.0),
    "zeros": lambda x: torch.zeros(3, 2),
    "scalar_tensor": lambda x: torch.scalar_tensor(2.5),
    "linspace": lambda x: torch.linspace(0, 1, 7),
}


@pytest.mark.parametrize("name", FACTORY_CASES)
def test_constant_outputs_are_fresh_real_tensors(name):
    """A graph returning a constant returns a real tensor, a new one per call:
    writing to one result does not change the next."""
    compiled = compiled_matches(FACTORY_CASES[name], X)
    first = compiled(X)
    first.add_(1)
    assert_close(compiled(X), FACTORY_CASES[name](X), "after writing to an earlier result")


# -- decompositions that stand on their own ----------------------------------------
def test_max_pool_compiles_in_a_fresh_process():
    """Inductor's max-pool decomposition needs its lowering module, which a fresh
    process has not imported: tessera's table keeps max pooling whole."""
    code = (
        "import torch, torch.nn as nn\n"
        "m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.MaxPool2d(2), nn.ReLU()).eval()\n"
        "x = torch.randn(1, 3, 16, 16)\n"
        "with torch.no_grad():\n"
        "    y = torch.compile(m, backend='tessera', options={'strict': True})(x)\n"
        "    torch.testing.assert_close(y, m(x))\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_a_failure_while_tracing_runs_the_graph_as_captured(monkeypatch):
    """A decomposition that raises while AOTAutograd traces: the graph runs as
    Dynamo captured it (eager's answer), reported; under strict it raises."""
    from tessera.compiler import capture

    def broken():
        def fail(*args, **kwargs):
            raise RuntimeError("a decomposition that cannot run")

        return {torch.ops.aten.tanh.default: fail}

    monkeypatch.setattr(capture, "decomposition_table", broken)
    with collect_reports() as reports:
        compiled_matches(lambda x: torch.tanh(x) + 1, X, options={})
    assert reports and reports[0].status == "aten" and "cannot run" in reports[0].reason
    torch._dynamo.reset()
    with pytest.raises(BackendCompilerFailed, match="strict"):
        torch.compile(lambda x: torch.tanh(x) + 1, backend="tessera", options=STRICT)(X)


# -- weights: every change eager sees ------------------------------------------------
def _conv_bn() -> nn.Module:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 32, 1)).eval()
    with torch.no_grad():
        m[1].running_var.uniform_(0.5, 1.5)
    return m


def _upsample_conv() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Upsample(scale_factor=2.0), nn.Conv2d(4, 8, 3, padding=1)).eval()


def _linear() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()


MODELS = {"conv_bn": (_conv_bn, (1, 3, 8, 8)), "upsample_conv": (_upsample_conv, (1, 4, 5, 6)),
          "linear": (_linear, (3, 8))}
WRITES = {
    "data_mul": lambda p: p.data.mul_(2),
    "data_copy": lambda p: p.data.copy_(torch.randn_like(p)),
    "numpy": lambda p: p.detach().numpy().__imul__(-1),
}


@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("name", MODELS)
def test_weight_writes_that_bypass_the_version_counter_are_seen(name, write):
    """By default nothing computed from a weight is kept between calls: a write
    through ``.data`` or numpy (no version bump) is seen, as eager sees it."""
    build, shape = MODELS[name]
    model, x = build(), torch.randn(shape)
    with torch.no_grad():
        compiled = compiled_matches(model, x, rtol=1e-4, atol=1e-4)
        for p in model.parameters():
            WRITES[write](p)
        assert_close(compiled(x), model(x), f"{name} after {write}")


@pytest.mark.parametrize("freezing", [False, True])
@pytest.mark.parametrize("name", ["conv_bn", "upsample_conv"])
def test_inference_mode(name, freezing):
    """Under ``torch.inference_mode`` the prepared weights are inference tensors,
    which have no version counter."""
    build, shape = MODELS[name]
    model, x = build(), torch.randn(shape)
    with torch.inference_mode():
        compiled_matches(model, x, options={"strict": True, "freezing": freezing}, calls=3, rtol=1e-4, atol=1e-4)


# -- library calls: eager's semantics at the edges -------------------------------------
@pytest.mark.parametrize("bias_shape, k", [((1,), 5), ((6,), 0), ((1, 6), 5), ((4, 1), 5)])
def test_addmm_broadcast_bias_and_empty_k(bias_shape, k):
    """A bias that broadcasts (one element, a column) and K = 0 (only the bias)."""
    b, x, w = torch.randn(bias_shape), torch.randn(4, k), torch.randn(k, 6)
    with torch.no_grad():
        compiled_matches(torch.addmm, b, x, w)
        compiled_matches(torch.addmm, b, x, w, options={"strict": True, "freezing": True})


@pytest.mark.parametrize("act", [nn.ReLU(), nn.ReLU6(), nn.SiLU()])
@pytest.mark.parametrize("conv_kernels", [False, True])
def test_nan_stays_nan_through_conv_activations(act, conv_kernels):
    """oneDNN's ReLU and hardtanh post-ops turn NaN into 0; eager keeps it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), act).eval()
    x = torch.randn(1, 16, 8, 8)
    x[0, 3, 4, 4] = float("nan")
    with torch.no_grad():
        compiled_matches(model, x, options={"strict": True, "conv_kernels": conv_kernels}, rtol=1e-4, atol=1e-4)


def test_nan_stays_nan_through_a_residual_conv():
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(16, 16, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x) + x)

    x = torch.randn(1, 16, 8, 8).contiguous(memory_format=torch.channels_last)
    x[0, 2, 1, 1] = float("nan")
    with torch.no_grad():
        compiled_matches(Block().eval(), x, rtol=1e-4, atol=1e-4)


def test_conv_weight_built_inside_forward():
    def f(x):
        return F.conv2d(x, torch.ones(8, 3, 3, 3) * 0.1, torch.arange(8.0))

    with torch.no_grad():
        compiled_matches(f, torch.randn(1, 3, 8, 8), rtol=1e-4, atol=1e-4)


def test_unwritable_cache_still_runs_the_built_code(tmp_path, monkeypatch):
    """A cache directory that cannot be created (a file is in the way) costs a
    warning; the code built is still what runs."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(blocker / "cache"))
    scale = float(torch.randint(2, 10**6, ()).item())  # a graph no cache has seen
    with collect_reports() as reports:
        compiled_matches(lambda x: torch.sigmoid(x) * scale, X)
    assert reports[0].compiled and reports[0].kernels == 1


@pytest.mark.parametrize("shape", [(2, 0, 4), (0, 3), (3, 0)])
def test_empty_dims_next_to_others(shape):
    """An empty tensor addresses nothing: any strides fit the kernel's signature;
    a kernel writing an empty tensor has an empty grid and is not launched."""
    compiled_matches(lambda x: x.sum(-1 if shape[-1] == 0 else 1) + 1, torch.randn(shape))
    torch._dynamo.reset()
    compiled_matches(lambda x: torch.sigmoid(x * 2 + 1), torch.randn(shape))


def test_a_failing_run_falls_back_to_the_captured_graph(monkeypatch, caplog):
    """A compiled program that raises while running (a bug of tessera's) still
    gives eager's answer, from the captured graph, on this call and the next."""
    from tessera.runtime.program import Program

    fn = lambda x: torch.sigmoid(x) * 3  # noqa: E731
    compiled = torch.compile(fn, backend="tessera")
    assert_close(compiled(X), fn(X), "before")

    def broken(self, *tensors, **kwargs):
        raise RuntimeError("a kernel that cannot run")

    monkeypatch.setattr(Program, "run", broken)
    for _ in range(2):
        assert_close(compiled(X), fn(X), "after the program broke")
    assert "failed while running" in caplog.text and "cannot run" in caplog.text
    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="cannot run"):
        torch.compile(fn, backend="tessera", options=STRICT)(X)


@pytest.mark.parametrize("op", [torch.mul, torch.add, torch.maximum, torch.minimum])
def test_arithmetic_on_booleans_compiles(op):
    """torch's * and min on booleans are "and", + and max are "or"."""
    compiled_matches(lambda x, y: op(x > 0, y > 0.5), X, X.flip(0))


@pytest.mark.parametrize("fn", [lambda x: x.sum(0, keepdim=True) * 2, lambda x: x.amax(-1) + 1, torch.mean],
                         ids=["sum", "amax", "mean"])
def test_reductions_of_a_0d_tensor(fn):
    compiled_matches(fn, torch.tensor(1.5))


def test_reshape_of_an_empty_tensor():
    compiled_matches(lambda x, y: (x.reshape(0, 4, 3) * 2).sum(1) + y, torch.randn(0, 12), torch.randn(3))


def test_ops_with_effects_compile_and_raise_like_eager(caplog):
    """``linalg.inv`` checks its input through an op with effects (AOTAutograd's
    ``with_effects``): it is kept in order, and a singular matrix raises eager's
    error without turning the compiled program off."""
    fn = lambda a: torch.linalg.inv(a) * 2  # noqa: E731
    compiled = compiled_matches(fn, torch.randn(3, 3) + 3 * torch.eye(3))
    with pytest.raises(torch.linalg.LinAlgError):
        compiled(torch.zeros(3, 3))
    assert_close(compiled(torch.eye(3)), fn(torch.eye(3)), "after the error")
    assert "failed while running" not in caplog.text  # the inputs' error, not tessera's


def test_cat_of_empty_tensors_only():
    compiled_matches(lambda x, y: torch.cat([x, y], dim=1) + 1, torch.randn(2, 0), torch.randn(2, 0))


@pytest.mark.parametrize("threads", [1, 2])
def test_denormals_follow_torch(threads):
    """tessera's kernels keep denormal floats as eager does (IEEE: no flush), and flush
    them where the user asked torch to (``torch.set_flush_denormal(True)``): the
    kernels run under the caller's floating-point mode, on every thread."""

    def f(x, y):
        return (x * y + 1e-39) * 0.5

    x = torch.rand(1, 8, 64, 64) * 1e-20  # x * y is below float32's smallest normal
    y = torch.full((1, 8, 64, 64), 1e-19)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        compiled = torch.compile(f, backend="tessera", options=STRICT)
        want = f(x, y)
        assert ((want != 0) & (want.abs() < torch.finfo(torch.float32).tiny)).all()
        assert torch.equal(compiled(x, y), want)
        if not torch.set_flush_denormal(True):
            pytest.skip("this CPU cannot flush denormals")
        try:
            want = f(x, y)
            assert (want == 0).all()
            assert torch.equal(compiled(x, y), want)
        finally:
            torch.set_flush_denormal(False)
    finally:
        torch.set_num_threads(before)


def test_split_chunk_and_unbind_compile_as_slices():
    """``qkv.chunk(3)``, ``split`` with sizes and ``unbind`` become slices that fuse
    into the kernels of their users: no op of the graph runs through ATen."""

    def f(qkv):
        q, k, v = qkv.chunk(3, dim=1)
        a, b = torch.split(q, [3, 5], dim=2)
        rows = torch.unbind(k, dim=0)
        return a.relu() * 2, b + 1, v.sigmoid(), rows[1] - rows[0]

    with collect_reports() as reports:
        compiled_matches(f, torch.randn(2, 24, 8, 5))
    assert reports and all(r.compiled and not r.aten_ops for r in reports), [r.summary() for r in reports]


# -- an ATen call's operand keeps its innermost dim innermost ---------------------------------
_UNIT_STRIDE = torch.library.Library("tessera_test", "DEF")
_UNIT_STRIDE.define("add_bias(Tensor x, Tensor bias) -> Tensor")


def _add_bias(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    if bias.stride(-1) != 1:  # as CUDA's memory-efficient attention checks its bias
        raise RuntimeError(f"bias: last dimension must be contiguous, strides {bias.stride()}")
    return x + bias


_UNIT_STRIDE.impl("add_bias", _add_bias, "CompositeExplicitAutograd")
torch.library.register_fake("tessera_test::add_bias", lambda x, bias: torch.empty_like(x), lib=_UNIT_STRIDE)


def test_expanded_operand_of_an_aten_call_keeps_its_last_dim_contiguous():
    """A mask expanded over heads and rows (strides 0) and passed to an op tessera
    keeps as an ATen call: the program materializes it with its last dim innermost
    (it once put a broadcast dim there, and GPT-2 on CUDA crashed in attention)."""
    def f(x, keep):
        bias = (keep[:, None, None, :] * -1e4).expand(2, 3, 8, 8)
        return torch.ops.tessera_test.add_bias(x, bias)

    compiled_matches(f, torch.randn(2, 3, 8, 8), torch.rand(2, 8))
