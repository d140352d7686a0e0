"""A host program as the graph cache stores it (``compiler/host_plan.py``): its
steps hold no IR (``compiler/host_steps.py``), it pickles whole and, loaded
again with its fused kernels, computes what the program it was made from does.

Pinned here: the ops a host program runs through their reference semantics
(views, concatenation, GEMMs, ATen calls) bind to plain callables that equal
the interpreter's semantics; an op with no such binding keeps its IR and runs
the same after a round trip; a stored program that launches kernels the loaded
artifact lacks does not load; user code whose graphs have such steps gives
eager's values when its program comes from the cache.
"""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close

from tessera.compiler.backend import BackendOptions, build_kernels, load_kernels
from tessera.compiler.capture import capture
from tessera.compiler.context import make_context
from tessera.compiler.fx_import import import_graph
from tessera.compiler.host_plan import dump_program, load_program
from tessera.compiler.host_program import bind_reference, build_host_program
from tessera.compiler.host_steps import IrOp, PlacedCall
from tessera.compiler.interpreter.impls import IMPLS
from tessera.compiler.library_calls import REFERENCE_CPU
from tessera.compiler.pass_pipeline import build_pipeline
from tessera.compiler.report import collect_reports
from tessera.dialects import tsr


def _views_and_calls(x, w):
    y = torch.cat([x.permute(0, 2, 1), x.transpose(1, 2) * 2], dim=1)
    a, b = y.split([6, 6], dim=1)
    z = F.max_pool1d(a + b, 2).cumsum(-1)
    return torch.mm(z.reshape(-1, z.shape[-1]), w).expand(2, -1, -1)


def _program(fn, args):
    """The compiled host program of ``fn``'s graph, its fused kernels' module, and the graph."""
    (gm,) = capture(fn, args).forward
    module = import_graph(gm).module
    options = BackendOptions().compile_options(torch.device("cpu"))
    build_pipeline(BackendOptions().pipeline()).apply(make_context(), module)
    host_ir, artifact = build_kernels(module, options)
    kernels = load_kernels(artifact, torch.device("cpu"))
    return build_host_program(host_ir, kernels), kernels, host_ir


def test_a_program_round_trips_through_bytes():
    args = (torch.randn(2, 4, 6), torch.randn(2, 3))
    host, kernels, _ = _program(_views_and_calls, args)
    loaded = load_program(dump_program(host, kernels), kernels)
    kinds = {type(s.fn.fn).__name__ for s in loaded.program.steps if isinstance(getattr(s, "fn", None), PlacedCall)}
    assert {"Torch", "AtenCall"} <= kinds, kinds  # torch.mm, cumsum
    assert loaded.inputs == host.inputs and loaded.report.kernels == host.report.kernels
    for a, b in zip(loaded(*args), host(*args)):
        assert torch.equal(a, b)
    assert_close(loaded(*args)[0], _views_and_calls(*args), "loaded program vs eager")


def test_a_program_launching_kernels_it_was_not_given_does_not_load():
    args = (torch.randn(2, 4, 6), torch.randn(2, 3))
    host, kernels, _ = _program(_views_and_calls, args)
    if kernels is None:
        pytest.skip("the program launches no fused kernel")
    with pytest.raises(pickle.UnpicklingError, match="not loaded"):
        load_program(dump_program(host, kernels), None)


def test_host_ops_bind_and_survive_pickling():
    """Each op the host graph runs through its reference semantics binds to a
    plain callable (not its IR), which pickles and, loaded again, computes what
    the interpreter computes for the op (the interpreter runs the binding:
    ``impls.BINDINGS``)."""
    args = (torch.randn(2, 4, 6), torch.randn(2, 3))
    _, _, host_ir = _program(_views_and_calls, args)
    ops = [op for op in host_ir.walk() if type(op) in IMPLS and not isinstance(op, (tsr.ConstantOp, tsr.LaunchOp))]
    assert {type(op) for op in ops} >= {tsr.AtenCallOp, tsr.MatmulOp}, [op.name for op in ops]
    torch.manual_seed(0)
    for op in ops:
        inputs = [torch.randn(v.type.get_shape()) if hasattr(v.type, "get_shape") else 1.0 for v in op.operands]
        bound = bind_reference(op, REFERENCE_CPU.device)
        assert not isinstance(bound, IrOp), op.name
        loaded = pickle.loads(pickle.dumps(bound))
        want = IMPLS[type(op)](op, REFERENCE_CPU, *inputs)
        got = loaded(*inputs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert torch.equal(g, w), op.name


def test_an_op_without_a_binding_keeps_its_ir():
    (gm,) = capture(lambda x: x.sum(1, keepdim=True), (torch.randn(3, 4),)).forward
    module = import_graph(gm).module
    (op,) = [o for o in module.walk() if isinstance(o, tsr.SumOp)]
    bound = pickle.loads(pickle.dumps(bind_reference(op, REFERENCE_CPU.device)))
    assert isinstance(bound, IrOp)
    x = torch.randn(3, 4)
    assert torch.equal(bound(x), x.sum(1, keepdim=True))


@pytest.mark.parametrize("freezing", [False, True])
def test_user_code_from_the_cache_gives_eagers_values(tmp_path, monkeypatch, freezing):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                               torch.nn.Upsample(scale_factor=2), torch.nn.Conv2d(8, 4, 3, padding=1)).eval()

    def model(x, w):
        y = conv(x)
        return torch.cat([y.flatten(1) @ w, y.mean((2, 3))], dim=1)

    args = (torch.randn(2, 3, 8, 8), torch.randn(4 * 16 * 16, 5))
    with torch.no_grad():
        want = model(*args)
    outs = []
    for _ in range(2):
        torch._dynamo.reset()
        with torch.no_grad(), collect_reports() as reports:
            outs.append(torch.compile(model, backend="tessera", options={"strict": True, "freezing": freezing})(*args))
        outs.append(reports[0].cached)
    assert outs[1::2] == ["", "local"]
    assert torch.equal(outs[0], outs[2])
    assert_close(outs[2], want, "cached program vs eager")
