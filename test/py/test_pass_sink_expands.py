"""``sink-expands``, checked by the interpreter before and after on concrete sizes:
the rewritten functions give the same values, and the expand sized by host values
goes where an elementwise op can broadcast its input itself."""

from __future__ import annotations

from pathlib import Path

import torch

from pass_testing import apply_pass, parse

from tessera.compiler.interpreter import interpret

MODULE = parse((Path(__file__).resolve().parents[1] / "lit" / "passes" / "sink-expands.mlir").read_text())


def _same(before, after, function: str, *args) -> None:
    """Both modules' outputs on ``args`` (tensors and sizes), exactly equal."""
    want, got = (interpret(m, *args, function=function) for m in (before, after))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and torch.equal(g, w)


def _ops(module, name: str) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("tsr.") and op.parent_op().sym_name.data == name]


def test_a_mean_backward_broadcasts_its_gradient_after_the_pass():
    after = apply_pass(MODULE, "sink-expands")
    assert "tsr.expand" not in _ops(after, "mean_backward")
    for n, h, w in ((3, 5, 7), (2, 9, 2)):
        g, x = torch.randn(n, 64, 1, 1), torch.randn(n, 64, h, w)
        s = torch.tensor(float(h * w), dtype=torch.float64)
        _same(MODULE, after, "mean_backward", g, x, s, n, h, w)


def test_an_expand_read_whole_stays():
    after = apply_pass(MODULE, "sink-expands")
    assert _ops(after, "kept").count("tsr.expand") == 1
    g, x = torch.randn(2, 64, 1, 1), torch.randn(2, 64, 1, 1)
    _same(MODULE, after, "kept", g, x, 2, 3, 4)
