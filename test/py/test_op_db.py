"""PyTorch's OpInfo ``op_db`` through ``torch.compile(backend="tessera")``, as
PyTorch tests Inductor: every op's samples against eager, float32 forward for
all ops; float16, bfloat16 and float32 backward for the common ones
(``op_db_harness.COMMON``). A crash or a wrong result fails, unless the op is an
expected failure (``op_db_expected.EXPECTED``: crashes only, each with its
reason, xfail(strict): the list can only shrink). ``-m slow`` runs more
samples per op. The session's tally (compiled / compiled+aten / fallback) is
printed at the end of the run (``conftest.py``)."""

from __future__ import annotations

import pytest
import torch

from op_db_expected import EXPECTED
from op_db_harness import COMMON, FAILING, is_nondeterministic, op_id, quiet, run_sample, samples

try:
    from torch.testing._internal.common_methods_invocations import op_db
except ImportError as e:  # expecttest missing: the README's test command installs it
    pytest.skip(f"op_db needs {e.name}", allow_module_level=True)

OPS = {op_id(op): op for op in op_db if not is_nondeterministic(op)}
COMMON_OPS = [name for name in OPS if name in COMMON or name.split(".")[0] in COMMON]
OUTCOMES: list = []
"""Every sample's outcome of this session (``conftest.pytest_terminal_summary``)."""


def _check(name: str, dtype: torch.dtype, count: int, backward: bool = False, dynamic: bool = False) -> None:
    failures = []
    for sample in samples(OPS[name], dtype, count, requires_grad=backward):
        with quiet():
            outcome = run_sample(OPS[name], sample, dtype, backward, dynamic)
        OUTCOMES.append((name, dtype, backward, dynamic, outcome))
        if outcome.status in FAILING:
            failures.append(f"{outcome.status}: {outcome.reason}\n  {sample}\n  " + "\n  ".join(outcome.graphs))
    assert not failures, "\n".join(failures)


def _marks(name: str, kind: str) -> list:
    reason = EXPECTED.get((name, kind)) or EXPECTED.get((name, "*"))
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "float32")) for n in OPS])
def test_float32_forward(name):
    _check(name, torch.float32, count=2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "half")) for n in COMMON_OPS])
def test_half_forward(name, dtype):
    _check(name, dtype, count=1)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "backward")) for n in COMMON_OPS])
def test_float32_backward(name):
    _check(name, torch.float32, count=1, backward=True)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "dynamic")) for n in COMMON_OPS])
def test_float32_forward_dynamic(name):
    """The common ops compiled with ``dynamic=True``: symbolic sizes in the graph."""
    _check(name, torch.float32, count=2, dynamic=True)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "dynamic-backward")) for n in COMMON_OPS])
def test_float32_backward_dynamic(name):
    """The common ops' gradients with ``dynamic=True``: a training step at symbolic sizes."""
    _check(name, torch.float32, count=3, backward=True, dynamic=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n, "float32")) for n in OPS])
def test_float32_forward_all_samples(name):
    _check(name, torch.float32, count=8)
