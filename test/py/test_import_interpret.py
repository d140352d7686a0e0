"""Every example: capture its ATen graphs, import them into ``tsr``, verify,
and interpret the IR against the captured graph (on random inputs shaped like
its placeholders) and against the eager model (on the model's own inputs)."""

from __future__ import annotations

import pytest
import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense

from tessera.compiler.capture import capture
from tessera.compiler.fx_import import import_graph
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import verify_module
from tessera.dialects.tsr import AtenCallOp
from tessera.compiler.placements import is_in_layout

from conftest import (
    CONV_EXAMPLES,
    EXAMPLE_NAMES,
    TRAINABLE,
    assert_all_layouts,
    assert_close,
    assert_same_strides,
    example,
    outputs_list,
    placeholder_inputs,
    record_graphs,
)

# (example, factory): every example, plus its extra input variants.
CASES = [(n, "example") for n in EXAMPLE_NAMES] + [
    ("resnet_block", "example_channels_last"),
    ("int8_linear", "example_signed"),
]
CASE_IDS = [n if v == "example" else f"{n}-{v.removeprefix('example_')}" for n, v in CASES]


def _import_checked(gm):
    result = import_graph(gm)
    verify_module(result.module)
    assert_all_layouts(result.module)
    return result


def _check_against_graph(gm, result, seed: int, what: str) -> None:
    """The interpreted module equals the captured graph on random inputs."""
    inputs = placeholder_inputs(gm, seed)
    assert all(x.count_nonzero() > 0 for x in inputs if x.numel() > 1), "inputs must not be zeros"
    expected = [o for o in outputs_list(gm(*[x.clone() for x in inputs])) if o is not None]
    got = interpret(result.module, *inputs)
    assert len(got) == len(expected), f"{what}: {len(got)} outputs, the graph has {len(expected)}"
    ret_types = result.module.body.block.ops.first.function_type.outputs.data
    for i, (g, e, t) in enumerate(zip(got, expected, ret_types)):
        assert_close(g, e, f"{what} output #{i}")
        assert is_in_layout(g, t), f"{what} output #{i}: strides {g.stride()} are not those of {t}"
        if is_non_overlapping_and_dense(e):
            assert_same_strides(g, e, f"{what} output #{i}")


@pytest.mark.parametrize(("name", "variant"), CASES, ids=CASE_IDS)
def test_inference_graph_interprets_like_graph(name, variant):
    model, args = example(name, variant)
    graphs = capture(model, args, training=False)
    assert len(graphs.forward) == 1, f"{name}: expected one graph (no graph breaks), got {len(graphs.forward)}"
    assert not graphs.backward
    for i, gm in enumerate(graphs.forward):
        result = _import_checked(gm)
        assert result.output_is_none == [False], result.output_is_none
        _check_against_graph(gm, result, seed=i, what=f"{name} forward")


@pytest.mark.parametrize("name", CONV_EXAMPLES)
def test_conv_forward_graphs_have_no_aten_calls(name):
    for training in (False, True):
        model, args = example(name)
        for gm in capture(model, args, training=training).forward:
            result = import_graph(gm)
            calls = [op.callee.data for op in result.module.walk() if isinstance(op, AtenCallOp)]
            assert not calls and not result.fallbacks, (
                f"{name} ({'training' if training else 'inference'}) forward graph keeps ATen calls: "
                f"{dict(result.fallbacks)}"
            )


@pytest.mark.parametrize(("name", "variant"), CASES, ids=CASE_IDS)
def test_inference_matches_eager(name, variant):
    model, args = example(name, variant)
    with torch.no_grad():
        eager = model(*args)
    out, runs = record_graphs(model, args, training=False)
    assert [k for k, _, _ in runs] == ["forward"], [k for k, _, _ in runs]
    _, gm, inputs = runs[0]
    result = _import_checked(gm)
    (got,) = interpret(result.module, *inputs)
    assert_close(got, eager, f"{name}: interpreted vs eager")
    assert_close(out, eager, f"{name}: captured graph vs eager")
    assert_same_strides(got, eager, f"{name}: interpreted vs eager")


@pytest.mark.parametrize("name", TRAINABLE)
def test_training_graphs_interpret_like_graphs(name):
    model, args = example(name)
    graphs = capture(model, args, training=True)
    assert len(graphs.forward) == 1 and len(graphs.backward) == 1, (len(graphs.forward), len(graphs.backward))
    for kind, gms in (("forward", graphs.forward), ("backward", graphs.backward)):
        for i, gm in enumerate(gms):
            result = _import_checked(gm)
            _check_against_graph(gm, result, seed=10 + i, what=f"{name} {kind}")


@pytest.mark.parametrize("name", TRAINABLE)
def test_training_matches_eager(name):
    """The forward graph on the model's own inputs gives eager's output; the
    backward graph on the inputs it got gives what the graph itself gives."""
    model, args = example(name)
    eager = model(*args)
    out, runs = record_graphs(model, args, training=True)
    kinds = [k for k, _, _ in runs]
    assert kinds == ["forward", "backward"], kinds
    fw_gm, fw_inputs = runs[0][1], runs[0][2]
    fw = _import_checked(fw_gm)
    got = interpret(fw.module, *fw_inputs)
    assert_close(got[0], eager.detach(), f"{name}: training forward vs eager")
    bw_gm, bw_inputs = runs[1][1], runs[1][2]
    bw = _import_checked(bw_gm)
    expected = [o for o in outputs_list(bw_gm(*[x.clone() for x in bw_inputs])) if o is not None]
    got = interpret(bw.module, *bw_inputs)
    assert len(got) == len(expected) > 0
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_close(g, e, f"{name}: backward output #{i}")
    # The gradients the graph gave in the real run are eager's.
    eager_grads = torch.autograd.grad(eager.sum(), [p for p in model.parameters()])
    for (pname, p), g in zip(model.named_parameters(), eager_grads):
        assert p.grad is not None, f"{name}: no gradient for {pname}"
        assert_close(p.grad, g, f"{name}: grad of {pname}")


@pytest.mark.parametrize(("variant", "lhs"), [("example", "ui8"), ("example_signed", "i8")])
def test_int8_imports_as_int_mm(variant, lhs):
    """The int8 example imports as a tsr.int_mm on its (u)int8 and int8 inputs."""
    model, args = example("int8_linear", variant)
    (gm,) = capture(model, args).forward
    result = _import_checked(gm)
    (int_mm,) = [op for op in result.module.walk() if op.name == "tsr.int_mm"]
    elems = [str(v.type.get_element_type()) for v in (*int_mm.operands, int_mm.results[0])]
    assert elems == [lhs, "i8", "i32"], elems
    inputs = placeholder_inputs(gm, seed=3)
    ints = [x for x in inputs if x.dtype in (torch.int8, torch.uint8)]
    assert len(ints) == 2
    expected = outputs_list(gm(*inputs))[0]
    (got,) = interpret(result.module, *inputs)
    assert_close(got, expected, "int8 forward")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("channels_last", [False, True])
def test_inference_batch_norm_is_traced_whole_and_expanded(dtype, affine, channels_last):
    """Inference BatchNorm stays one node through the trace and imports as the
    ops of its ATen decomposition (statistics in f32 for half types): no ATen
    call is left, and the IR computes what ATen's BatchNorm does."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8, affine=affine)).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    model = model.to(dtype)
    x = torch.randn(2, 3, 9, 9, dtype=dtype)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    (gm,) = capture(model, (x,)).forward
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten._native_batch_norm_legit_no_training.default in targets, targets
    result = _import_checked(gm)
    assert not [op for op in result.module.walk() if isinstance(op, AtenCallOp)]
    _check_against_graph(gm, result, seed=5, what=f"batch norm {dtype}")  # the graph runs ATen's BatchNorm


def test_batch_norm_whose_saved_statistics_are_read_stays_an_aten_call():
    """A graph that reads BatchNorm's saved statistics keeps the call whole (the
    expansion gives the output only)."""
    def f(x, w, b, m, v):
        y, mean, rstd = torch.ops.aten._native_batch_norm_legit_no_training(x, w, b, m, v, 0.1, 1e-5)
        return y, mean, rstd

    args = (torch.randn(2, 4, 5, 5), torch.rand(4), torch.rand(4), torch.rand(4), torch.rand(4) + 0.5)
    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(*args)
    result = _import_checked(gm)
    calls = [op.callee.data for op in result.module.walk() if isinstance(op, AtenCallOp)]
    assert calls == ["aten._native_batch_norm_legit_no_training.default"], calls
    got = interpret(result.module, *args)
    for g, e in zip(got, f(*args)):
        assert_close(g, e, "batch norm with its statistics")


def test_boolean_or_and_import_as_selects():
    """``|`` and ``&`` of boolean tensors (ReLU6's backward mask) become ``tsr.where``s,
    not ATen calls; of other dtypes they stay ATen's."""
    def f(x, y, i):
        return (x <= 0) | (x >= 6), torch.logical_and(y > 0, x < 3), i | 5

    args = (torch.randn(2, 4, 5, 5) * 5, torch.randn(2, 4, 5, 5), torch.randint(0, 9, (7,)))
    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(*args)
    result = _import_checked(gm)
    calls = [op.callee.data for op in result.module.walk() if isinstance(op, AtenCallOp)]
    assert calls == ["aten.bitwise_or.Scalar"], calls
    for g, e in zip(interpret(result.module, *args), f(*args)):
        assert torch.equal(g, e)
