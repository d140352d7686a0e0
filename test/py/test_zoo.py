"""The model zoo (``zoo_models.py``: torchvision, timm, diffusers, transformers;
random weights, small inputs) through ``torch.compile(backend="tessera")``:
every model compiles (``strict``: no graph falls back) and matches eager, in
inference and, for a few, a training step (outputs, parameter gradients and
BatchNorm statistics). What each model still runs through ATen is printed
(``pytest -s``)."""

from __future__ import annotations

import copy

import pytest
import torch

from tessera.compiler.report import collect_reports

from conftest import needs_gpu
from zoo_models import MODELS

STRICT = {"strict": True}

EXPECTED_FALLBACKS: dict[str, str] = {
    # model name -> why one of its graphs does not compile (a substring of the report's reason).
    # A model listed here is compiled without ``strict``; its other graphs must compile, the
    # fallback must give eager's answer, and the reason must still be this one.
}


def _options(name: str) -> dict:
    return {} if name in EXPECTED_FALLBACKS else STRICT


def _check_compiled(name: str, reports) -> None:
    assert reports, f"{name}: no graph reached tessera"
    failed = [r for r in reports if r.status != "compiled"]
    if name in EXPECTED_FALLBACKS:
        assert failed, f"{name} now compiles: remove it from EXPECTED_FALLBACKS"
        assert all(EXPECTED_FALLBACKS[name] in r.reason for r in failed), [r.summary() for r in failed]
    else:
        assert not failed, [r.summary() for r in failed]


def _close(got: torch.Tensor, expected: torch.Tensor, tolerance: float, what: str) -> None:
    assert type(got) is torch.Tensor and got.shape == expected.shape and got.dtype == expected.dtype, what
    scale = max(1.0, expected.abs().max().item())
    torch.testing.assert_close(got, expected, rtol=tolerance, atol=tolerance * scale, equal_nan=True, msg=what)


def _print_aten(name: str, reports) -> None:
    aten = sorted({k for r in reports for k in r.aten_ops})
    compiled = sum(r.compiled for r in reports)
    print(f"\n{name}: {compiled}/{len(reports)} graphs compiled; through ATen: {', '.join(aten) or 'nothing'}")
    for r in reports:
        if not r.compiled:
            print(f"  {r.summary()}")


@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name, marks=[pytest.mark.slow] if m.slow else [])
                                 for m in MODELS])
def test_inference_matches_eager(zoo):
    model, inputs = zoo.build()
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        compiled = torch.compile(model, backend="tessera", options=_options(zoo.name))
        for call in range(2):
            _close(compiled(*inputs), expected, zoo.tolerance, f"{zoo.name}, call {call}")
    _check_compiled(zoo.name, reports)
    _print_aten(zoo.name, reports)


FREEZING = ("resnet18", "squeezenet1_0", "densenet121", "mobilenet_v3_small")
"""Models also checked with ``freezing=True``: weights packed once, BatchNorms folded,
and their 3x3 convs with enough tiles by Winograd (``targets/x86/conv/winograd.py``)."""


@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name) for m in MODELS if m.name in FREEZING])
def test_inference_with_freezing_matches_eager(zoo, monkeypatch):
    """... and in the steady state (the straight-line runner's native segments), each
    planned buffer is its slot's kept view: none remade, no block taken anew."""
    from tessera.runtime.memory_plan import SlotMemory

    model, inputs = zoo.build()
    views: list[int] = []
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        compiled = torch.compile(model, backend="tessera", options={**_options(zoo.name), "freezing": True})
        for call in range(5):
            if call == 3:
                view = SlotMemory._view
                monkeypatch.setattr(SlotMemory, "_view", lambda self, b, slot: views.append(b) or view(self, b, slot))
            _close(compiled(*inputs), expected, zoo.tolerance, f"{zoo.name}, freezing, call {call}")
    _check_compiled(zoo.name, reports)
    assert views == [], f"{zoo.name}: slot views remade in the steady state"


@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name, marks=[pytest.mark.slow] if m.slow else [])
                                 for m in MODELS])
def test_inference_with_dynamic_shapes_matches_eager(zoo):
    """Every model compiled with ``dynamic=True`` (symbolic sizes: each size class
    compiled when first called, ``size_specialization.py``) runs compiled and
    matches eager."""
    model, inputs = zoo.build()
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        got = torch.compile(model, backend="tessera", dynamic=True, options=_options(zoo.name))(*inputs)
        _close(got, expected, zoo.tolerance, f"{zoo.name}, dynamic=True")
    _check_compiled(zoo.name, reports)


@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name) for m in MODELS if m.training])
def test_training_step_matches_eager(zoo):
    model, inputs = zoo.build()
    zoo.train(model)
    reference = copy.deepcopy(model)
    expected = reference(*inputs)
    expected.float().square().mean().backward()
    with collect_reports() as reports:
        got = torch.compile(model, backend="tessera", options=_options(zoo.name))(*inputs)
        got.float().square().mean().backward()
    _close(got.detach(), expected.detach(), zoo.tolerance, f"{zoo.name} training output")
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        if q.grad is not None:
            _close(p.grad, q.grad, 10 * zoo.tolerance, f"{zoo.name} grad of {name}")
    for (name, b), c in zip(model.named_buffers(), reference.buffers()):
        if b.is_floating_point():
            _close(b, c, zoo.tolerance, f"{zoo.name} buffer {name}")
    assert {r.kind for r in reports} == {"forward", "backward"}
    _check_compiled(zoo.name, reports)
    _print_aten(zoo.name, reports)


@needs_gpu
@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name, marks=[pytest.mark.slow] if m.slow else [])
                                 for m in MODELS])
def test_inference_on_cuda_matches_eager(zoo, full_fp32):
    """On a CUDA GPU (never in CI: it has none): tessera's PTX kernels and the library calls of
    the program against eager's CUDA run, in full float32."""
    pytest.importorskip(zoo.library)
    model, inputs = zoo.build()
    model, inputs = model.cuda(), tuple(x.cuda() for x in inputs)
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        compiled = torch.compile(model, backend="tessera", options=_options(zoo.name))
        for call in range(2):
            got = compiled(*inputs)
            assert got.is_cuda, f"{zoo.name}: the result left the GPU"
            _close(got, expected, zoo.tolerance, f"{zoo.name} on CUDA, call {call}")
    _check_compiled(zoo.name, reports)
    _print_aten(zoo.name, reports)


@pytest.mark.parametrize("zoo", [pytest.param(m, id=m.name, marks=[pytest.mark.slow] if m.slow else [])
                                 for m in MODELS])
def test_exported_matches_eager(zoo):
    """Every model through ``compile_exported`` (torch.export, then tessera with
    freezing, called without Dynamo) is exported, compiles, and matches eager."""
    from tessera.compiler.exported import CompiledExport, compile_exported

    model, inputs = zoo.build()
    with torch.no_grad(), collect_reports() as reports:
        expected = model(*inputs)
        compiled = compile_exported(model, inputs, options=_options(zoo.name))
        assert isinstance(compiled, CompiledExport), f"{zoo.name}: torch.export could not trace it"
        for call in range(2):
            got = compiled(*inputs)
            _close(got if isinstance(got, torch.Tensor) else got[0], expected if isinstance(expected, torch.Tensor)
                   else expected[0], zoo.tolerance, f"{zoo.name}, exported, call {call}")
    _check_compiled(zoo.name, reports)
