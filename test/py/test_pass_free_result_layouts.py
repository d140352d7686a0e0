"""``free-result-layouts``: each function of the pass's lit test, interpreted before
and after the pass, gives the same values, its free results in whatever layout
the pass chose and the others in theirs; and the pass changes free results only."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import func

from tessera.passes.free_result_layouts import free_results

from pass_testing import check_pass, parse

LIT = Path(__file__).resolve().parents[1] / "lit" / "passes" / "free-result-layouts.mlir"
MODULE = parse(LIT.read_text())
FUNCTIONS = [op.sym_name.data for op in MODULE.ops if isinstance(op, func.FuncOp)]


def _function(module, name: str) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_free_results_keep_their_values(name):
    free = free_results(_function(MODULE, name))
    after = check_pass(MODULE, "free-result-layouts", functions=(name,), any_layout=free)
    before_types = _function(MODULE, name).function_type.outputs.data
    after_types = _function(after, name).function_type.outputs.data
    for i, (b, a) in enumerate(zip(before_types, after_types)):
        assert i in free or a == b, f"result #{i} of @{name} is not free but changed type"


@pytest.mark.parametrize("name", ["before_the_relayout", "after_the_relayout"])
def test_a_free_result_moves_to_the_layout_it_is_made_in(name):
    after = check_pass(MODULE, "free-result-layouts", functions=(name,), any_layout=(0,))
    assert _function(after, name).function_type.outputs.data[0] != _function(MODULE, name).function_type.outputs.data[0]
