"""PyTorch's OpInfo database (``op_db``) through ``torch.compile(backend="tessera")``,
one sample at a time, against eager: the harness of ``test_op_db.py`` and
``bench/op_db_report.py``.

    outcome = run_sample(op, sample, torch.float32)
    outcome.status    # compiled | compiled+aten | fallback | no-graph | skipped | crash | wrong

``compiled``: every graph ran as tessera's program with no op through ATen;
``compiled+aten``: a compiled program that runs some ops through ATen (ops with
no ``tsr`` form: the documented per-op fallback); ``fallback``: a graph ran as
ATen or through the reference interpreter (``reason`` says why); ``no-graph``:
Dynamo gave tessera nothing to compile. ``crash`` (eager ran, tessera raised)
and ``wrong`` (a value, dtype, shape or a FakeTensor differs from eager's) are
failures.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch._subclasses.fake_tensor import FakeTensor

from tessera.compiler.report import collect_reports

PASSING = ("compiled", "compiled+aten", "fallback", "no-graph")
FAILING = ("crash", "wrong")

NONDETERMINISTIC = ("rand", "empty", "normal", "bernoulli", "multinomial", "uniform", "dropout", "poisson",
                    "exponential", "geometric", "cauchy", "log_normal", "randint")
"""Op names whose results are random or uninitialized: no value to compare."""

COMMON = ("add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "pow",
          "maximum", "minimum", "clamp", "where", "sum", "mean", "amax", "amin", "var", "std", "softmax",
          "log_softmax", "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu",
          "nn.functional.layer_norm", "nn.functional.group_norm", "nn.functional.batch_norm",
          "nn.functional.conv2d", "nn.functional.conv3d", "nn.functional.max_pool2d",
          "nn.functional.avg_pool2d", "nn.functional.pad", "nn.functional.interpolate", "matmul", "mm",
          "bmm", "addmm", "nn.functional.linear", "cat", "index_select", "gather", "transpose", "permute",
          "reshape", "expand", "masked_fill", "cumsum", "chunk", "split", "split_with_sizes", "unbind", "narrow")
"""Ops checked in float16/bfloat16 and backward as well (OpInfo names, variants included)."""

TOLERANCES = {torch.float32: (1.3e-5, 1e-4), torch.float64: (1e-7, 1e-7), torch.float16: (1e-2, 1e-2),
              torch.bfloat16: (1.6e-2, 2e-2)}
"""(rtol, atol) per dtype: tessera computes half types in f32 and rounds once."""


@dataclass
class Outcome:
    status: str
    reason: str = ""
    graphs: list[str] = field(default_factory=list)
    """Each graph's report, one line each."""
    per_size_class: bool = False
    """A graph of symbolic sizes was compiled per size class (not once for every size)."""


def op_id(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def is_nondeterministic(op) -> bool:
    return any(w in op.name for w in NONDETERMINISTIC)


def samples(op, dtype: torch.dtype, count: int, requires_grad: bool = False) -> Iterator:
    """Up to ``count`` samples of ``op`` (none when it does not take ``dtype``)."""
    if not op.supports_dtype(dtype, "cpu"):
        return iter(())
    try:
        gen = op.sample_inputs("cpu", dtype, requires_grad=requires_grad)
        return iter([s for _, s in zip(range(count), gen)])
    except Exception:  # noqa: BLE001 - an OpInfo that cannot make samples here
        return iter(())


def _tensors(out) -> list:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []


def _compare(got, expected, dtype: torch.dtype) -> str:
    """Why ``got`` is not eager's ``expected`` ("" when it is)."""
    g, e = _tensors(got), _tensors(expected)
    if len(g) != len(e):
        return f"{len(g)} tensors returned, eager returns {len(e)}"
    rtol, atol = TOLERANCES.get(dtype, (1.3e-5, 1e-4))
    for i, (a, b) in enumerate(zip(g, e)):
        if isinstance(a, FakeTensor) or type(a) not in (torch.Tensor, torch.nn.Parameter):
            return f"output {i} is a {type(a).__name__}, not a tensor"
        try:
            torch.testing.assert_close(a, b, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as err:
            return f"output {i}: {str(err).strip().splitlines()[0]} {' '.join(str(err).split())[:200]}"
    return ""


def _classify(reports) -> Outcome:
    graphs = [r.summary() for r in reports]
    if not reports:
        return Outcome("no-graph", graphs=graphs)
    bad = [r for r in reports if not r.compiled]
    if bad:
        return Outcome("fallback", f"{bad[0].status}: {bad[0].reason}", graphs)
    aten = sorted({k for r in reports for k in r.aten_ops})
    return Outcome("compiled+aten", ", ".join(aten), graphs) if aten else Outcome("compiled", "", graphs)


def run_sample(op, sample, dtype: torch.dtype, backward: bool = False, dynamic: bool = False) -> Outcome:
    """One sample through eager and tessera; backward: the gradients of the
    sample's inputs that require grad, through the sum of the float outputs;
    dynamic: compiled with ``dynamic=True`` (symbolic sizes)."""
    args, kwargs = sample.args, sample.kwargs

    def fn(x, *a):
        return op(x, *a, **kwargs)

    def grads(f):
        leaves = [t for t in [sample.input, *args] if isinstance(t, torch.Tensor) and t.requires_grad]
        outs = [o for o in _tensors(f(sample.input, *args)) if o.is_floating_point() and o.requires_grad]
        if not leaves or not outs:
            raise _NoGradient
        return torch.autograd.grad(sum(o.float().sum() for o in outs), leaves, allow_unused=True)

    try:
        expected = grads(fn) if backward else fn(sample.input, *args)
        again = grads(fn) if backward else fn(sample.input, *args)
    except _NoGradient:
        return Outcome("skipped", "no differentiable output")
    except Exception as e:  # noqa: BLE001 - eager rejects the sample: nothing to compare
        return Outcome("skipped", f"eager raises {type(e).__name__}")
    if _compare(again, expected, dtype):
        return Outcome("skipped", "eager's result differs between two calls")
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="tessera", dynamic=dynamic or None)
    try:
        with collect_reports() as reports:
            got = grads(compiled) if backward else compiled(sample.input, *args)
    except Exception as e:  # noqa: BLE001 - a crash of the user's program
        return Outcome("crash", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")
    finally:
        torch._dynamo.reset()
    mismatch = _compare(got, expected, dtype)
    if mismatch and dtype in (torch.float16, torch.bfloat16) and not backward:
        mismatch = _less_accurate(got, expected, lambda: fn(*_upcast((sample.input, *args))), dtype) and mismatch
    outcome = _classify(reports)
    outcome.per_size_class = any(r.size_class for r in reports)
    if mismatch:
        return Outcome("wrong", mismatch, outcome.graphs)
    return outcome


def _upcast(xs):
    return [x.float() if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16) else
            _upcast(x) if isinstance(x, (list, tuple)) else x for x in xs]


def _less_accurate(got, expected, reference, dtype: torch.dtype) -> bool:
    """Whether a half-precision result that differs from eager's is also further
    from the float32 reference than eager's is (tessera computes half types in
    f32 and rounds once, eager may round every step: cancellations, grid-sample
    coordinates). A result at least as close to float32 as eager's is not wrong."""
    try:
        refs = _tensors(reference())
    except Exception:  # noqa: BLE001 - no float32 reference: the mismatch stands
        return True
    rtol, atol = TOLERANCES[dtype]
    for g, e, r in zip(_tensors(got), _tensors(expected), refs):
        if not g.is_floating_point() or r.shape != g.shape:
            return True
        g64, e64, r64 = g.double(), e.double(), r.double()
        slack = (e64 - r64).abs() + atol + rtol * r64.abs()
        if not bool(((g64 - r64).abs() <= slack).logical_or(g64.isnan() & r64.isnan()).all()):
            return True
    return False


class _NoGradient(Exception):
    """The sample has no input and output to differentiate."""


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Fallback warnings are the harness's data, not noise for the log."""
    log = logging.getLogger("tessera")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def tally(outcomes: list[Outcome]) -> collections.Counter:
    return collections.Counter(o.status for o in outcomes)
