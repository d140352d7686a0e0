"""``torch.compile(model, backend="tessera")``: forward and backward match
eager, layouts of outputs match eager's, and what tessera cannot compile still
runs (as ATen) with the right answer."""

from __future__ import annotations

import copy
import logging

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

from tessera.compiler.backend import BackendOptions, tessera_backend
from tessera.compiler.report import collect_reports

from conftest import EXAMPLE_NAMES, assert_close, assert_same_strides, example, load_example_module

CASES = [(n, "example") for n in EXAMPLE_NAMES] + [
    ("resnet_block", "example_channels_last"),
    ("int8_linear", "example_signed"),
]
CASE_IDS = [n if v == "example" else f"{n}-{v.removeprefix('example_')}" for n, v in CASES]


def test_backend_is_registered():
    assert "tessera" in torch._dynamo.list_backends()


@pytest.mark.parametrize(("name", "variant"), CASES, ids=CASE_IDS)
def test_forward_matches_eager(name, variant):
    model, args = example(name, variant)
    with torch.no_grad():
        eager = model(*args)
        # strict: every graph compiled, none fell back to ATen or to the reference interpreter
        compiled = torch.compile(model, backend="tessera", options={"strict": True})
        out = compiled(*args)
        again = compiled(*args)  # the cached program, a second time
    assert_close(out, eager, f"{name}: compiled vs eager")
    assert_close(again, eager, f"{name}: second call vs eager")
    assert_same_strides(out, eager, f"{name}: compiled vs eager")


@pytest.mark.parametrize("name", ["resnet_block", "video_vae_block"])
def test_backward_matches_eager(name):
    model, (x,) = example(name)
    ref = copy.deepcopy(model)
    x_eager = x.clone().requires_grad_(True)
    x_comp = x.clone().requires_grad_(True)
    grad_out_seed = torch.Generator().manual_seed(7)

    eager = ref(x_eager)
    g = torch.randn(eager.shape, generator=grad_out_seed)
    eager.backward(g)

    out = torch.compile(model, backend="tessera", options={"strict": True})(x_comp)
    out.backward(g)

    assert_close(out.detach(), eager.detach(), f"{name}: forward")
    assert x_comp.grad is not None
    assert_close(x_comp.grad, x_eager.grad, f"{name}: input grad")
    params = dict(model.named_parameters())
    for pname, p_ref in ref.named_parameters():
        assert params[pname].grad is not None, f"{name}: no grad for {pname}"
        assert_close(params[pname].grad, p_ref.grad, f"{name}: grad of {pname}")


def test_backward_train_mode_batchnorm():
    """Batch statistics and running-stat updates in train mode, through tessera."""
    model, (x,) = example("resnet_block")
    model.train()
    ref = copy.deepcopy(model)
    x_eager = x.clone().requires_grad_(True)
    x_comp = x.clone().requires_grad_(True)
    eager = ref(x_eager)
    eager.square().sum().backward()
    out = torch.compile(model, backend="tessera")(x_comp)
    out.square().sum().backward()
    assert_close(out.detach(), eager.detach(), "train forward")
    assert_close(x_comp.grad, x_eager.grad, "train input grad")
    for (pname, p), p_ref in zip(model.named_parameters(), ref.parameters()):
        assert_close(p.grad, p_ref.grad, f"train grad of {pname}")
    for (bname, b), b_ref in zip(model.named_buffers(), ref.buffers()):
        assert_close(b, b_ref, f"buffer {bname}")


def test_channels_last_output_keeps_eager_strides(capsys):
    model, (x,) = example("resnet_block", "example_channels_last")
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    with torch.no_grad():
        eager = model(x)
        out = torch.compile(model, backend="tessera", options={"print_ir": True})(x)
    assert eager.is_contiguous(memory_format=torch.channels_last)
    assert out.stride() == eager.stride(), (out.stride(), eager.stride())
    assert_close(out, eager, "channels_last")
    ir = capsys.readouterr().out
    assert "// tessera: forward graph" in ir
    assert "tsr.conv" in ir and "#tsr.layout<nhwc>" in ir


@pytest.mark.parametrize("shape, dtype", [((2, 19, 13, 11), torch.float32), ((1, 24, 3, 17, 16), torch.bfloat16),
                                          ((1, 16, 9, 24), torch.float16), ((1, 64, 56, 56), torch.float32)])
def test_transposing_kernels_match_eager(shape, dtype):
    """Relayouts fused into elementwise kernels (compiled through the x86
    transpose tiles, edge tiles included) give eager's values and strides."""
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d

    def f(x, y):
        return torch.relu(y + x), x.contiguous(memory_format=fmt) * 2

    x = torch.randn(shape).to(dtype)
    y = torch.randn(shape).to(dtype).contiguous(memory_format=fmt)
    with torch.no_grad():
        eager = f(x, y)
        got = torch.compile(f, backend="tessera", options={"strict": True})(x, y)
    for g, e in zip(got, eager):
        assert g.stride() == e.stride()
        assert torch.equal(g, e)


def test_channels_last_3d_video_block(capsys):
    """A channels-last-3d input and weights are ``ndhwc`` in the IR; the output
    has eager's strides (whatever layout eager's kernels pick for it)."""
    model, (x,) = example("video_vae_block")
    model = model.to(memory_format=torch.channels_last_3d)
    x = x.to(memory_format=torch.channels_last_3d)
    with torch.no_grad():
        eager = model(x)
        out = torch.compile(model, backend="tessera", options={"print_ir": True})(x)
    assert_close(out, eager, "channels_last_3d")
    assert out.stride() == eager.stride(), (out.stride(), eager.stride())
    ir = capsys.readouterr().out
    assert "tensor<1x32x4x16x16xf32, #tsr.layout<ndhwc>>" in ir
    assert "tensor<32x32x3x3x3xf32, #tsr.layout<ndhwc>>" in ir


def test_upsample_all_dims_video_block():
    model = load_example_module("video_vae_block").make_block(upsample_time=True)
    x = torch.randn(1, 32, 2, 8, 8)
    with torch.no_grad():
        eager = model(x)
        out = torch.compile(model, backend="tessera")(x)
    assert out.shape == (1, 32, 4, 16, 16)
    assert_close(out, eager, "upsample 2x2x2")


def test_op_without_converter_runs_as_aten_call():
    """``cumsum`` has no tsr op: it stays a tsr.aten_call inside the compiled
    graph, and the graph's report says so."""

    def f(x):
        return torch.cumsum(torch.sigmoid(x), dim=1) * 2.0

    x = torch.randn(4, 8)
    with collect_reports() as reports:
        out = torch.compile(f, backend="tessera", options={"strict": True})(x)
    assert_close(out, f(x), "cumsum")
    (report,) = reports
    assert report.compiled and report.kernels >= 1
    assert dict(report.aten_ops) == {"aten.cumsum.default (no tsr form)": 1}


def test_graph_tessera_cannot_import_runs_as_aten(caplog, monkeypatch):
    """A graph the importer rejects (the failure injected here: tessera imports
    every graph the suites give it) runs whole as captured, with a warning and a
    report, and gives eager's answer; under strict it raises."""
    from tessera.compiler import fx_import
    from tessera.compiler.errors import ImportFailure

    def reject(gm, *args, **kwargs):
        raise ImportFailure("an op no converter knows")

    monkeypatch.setattr(fx_import, "import_graph", reject)  # the backend imports it when it compiles

    def f(x):
        return torch.relu(x).sum(-1) * 2

    x = torch.randn(4, 8)
    with caplog.at_level(logging.WARNING, logger="tessera"), collect_reports() as reports:
        out = torch.compile(f, backend="tessera")(x)
    assert_close(out, f(x), "rejected graph")
    assert [r.status for r in reports] == ["aten"] and "no converter" in reports[0].reason, reports
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("forward graph runs as ATen" in m for m in warnings), warnings
    torch._dynamo.reset()
    with pytest.raises(BackendCompilerFailed, match="strict"):
        torch.compile(f, backend="tessera", options={"strict": True})(x)


def test_fallback_graph_backward_still_correct(monkeypatch):
    """A forward graph the importer rejects still differentiates correctly."""
    from tessera.compiler import fx_import
    from tessera.compiler.errors import ImportFailure

    real = fx_import.import_graph

    def reject_forward(gm, name="forward", **kw):
        if name == "forward" and not any(n.name.startswith("tangents") for n in gm.graph.nodes):
            raise ImportFailure("an op no converter knows")
        return real(gm, name, **kw)

    monkeypatch.setattr(fx_import, "import_graph", reject_forward)

    def f(x):
        return (torch.sin(x) * x).square().sum()

    x1 = torch.randn(8, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    f(x1).backward()
    with collect_reports() as reports:
        torch.compile(f, backend="tessera")(x2).backward()
    assert_close(x2.grad, x1.grad, "rejected graph's grad")
    assert [r.status for r in reports] == ["aten", "compiled"], reports


def test_complex_ops_run_as_aten_calls_in_a_compiled_graph():
    """No kernel computes complex numbers: their ops stay ATen calls (complex
    Python scalars included) inside a compiled graph."""

    def f(x):
        spectrum = torch.fft.fft(x.to(torch.complex64)) * (2 - 1j)
        return torch.view_as_real(spectrum).sum(-1) + torch.relu(x)

    x = torch.randn(4, 8)
    with collect_reports() as reports:
        out = torch.compile(f, backend="tessera", options={"strict": True})(x)
    assert_close(out, f(x), "fft graph")
    assert reports[0].kernels >= 1 and any("fft" in k for k in reports[0].aten_ops), reports


def test_unknown_target_is_a_clear_value_error():
    with pytest.raises(ValueError, match=r"unknown target 'nope', expected one of \['aarch64', 'metal', 'ptx', 'x86'\]"):
        BackendOptions.from_dict({"target": "nope"})
    with pytest.raises(ValueError, match=r"unknown options \['colour'\]"):
        BackendOptions.from_dict({"colour": "blue"})
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        tessera_backend(gm, [torch.randn(2)], options={"target": "nope"})


def test_unknown_target_through_torch_compile():
    """Through torch.compile the options reach the backend at the first call;
    Dynamo wraps the ValueError, whose message still reaches the user."""
    compiled = torch.compile(torch.sin, backend="tessera", options={"target": "nope"})
    with pytest.raises(BackendCompilerFailed) as info:
        compiled(torch.randn(3))
    assert isinstance(info.value.inner_exception, ValueError)
    assert "ValueError: tessera: unknown target 'nope'" in str(info.value)


@pytest.mark.parametrize("target", ["x86", "ptx", "metal"])
def test_every_target_compiles(target):
    model, args = example("mlp")
    with torch.no_grad():
        out = torch.compile(model, backend="tessera", options={"target": target})(*args)
        assert_close(out, model(*args), f"target {target}")


@pytest.mark.parametrize("a_dtype", [torch.uint8, torch.int8])
def test_int_mm_runs_tesseras_exact_gemm(a_dtype):
    """``torch._int_mm`` in a compiled graph runs tessera's int8 GEMM, exactly,
    on adversarial values (every product at its extreme) and odd sizes."""
    lo, hi = (0, 256) if a_dtype == torch.uint8 else (-128, 128)
    a = torch.randint(lo, hi, (37, 131), dtype=a_dtype)
    a[:5] = hi - 1 if a_dtype == torch.uint8 else -128
    b = torch.randint(-128, 128, (131, 19), dtype=torch.int8)
    b[:, :3] = -128
    with collect_reports() as reports:
        got = torch.compile(lambda x, y: torch._int_mm(x, y), backend="tessera", options={"strict": True})(a, b)
    assert torch.equal(got, (a.to(torch.int64) @ b.to(torch.int64)).to(torch.int32))
    assert dict(reports[0].library) == {"tessera_int8_gemm": 1} and not reports[0].aten_ops, reports


@pytest.mark.parametrize("options, runs_on", [
    ({"conv_kernels": False}, "tessera_int8_gemm"),  # a conv option: the GEMM's choice stands
    ({"disable": ("select-impl",)}, "aten.int_mm"),  # no implementation recorded: the library
])
def test_the_int8_gemm_runs_where_select_impl_says(options, runs_on):
    """The host program runs an int8 GEMM on the implementation ``select-impl``
    recorded (``tsr.impl``), never by asking the machine; without one, on ATen."""
    a = torch.randint(0, 256, (8, 32), dtype=torch.uint8)
    b = torch.randint(-128, 128, (32, 16), dtype=torch.int8)
    with collect_reports() as reports:
        got = torch.compile(lambda x, y: torch._int_mm(x, y), backend="tessera", options=options)(a, b)
    assert torch.equal(got, (a.to(torch.int64) @ b.to(torch.int64)).to(torch.int32))
    assert dict(reports[0].library) == {runs_on: 1}, reports


@pytest.mark.parametrize("variant", ["example", "example_signed"])
def test_quantized_linear_is_one_gemm_with_its_epilogue(variant, pack_count):
    """``int_mm -> float -> * row scale -> * column scale -> + bias`` becomes one
    ``tsr.scaled_int_mm`` whose GEMM stores the scaled floats: bit for bit eager's
    result. The weight is packed once, not per call, and again after an update."""
    from tessera.compiler.capture import capture
    from tessera.compiler.stages import run_stages

    model, args = example("int8_linear", variant)
    host = run_stages(capture(model, args).forward[0], "x86", upto="kernel")["kernel"].value.host
    names = [op.name for op in host.walk()]
    assert "tsr.scaled_int_mm" in names and "tsr.int_mm" not in names and "tsr.launch" not in names
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        for _ in range(3):
            assert torch.equal(compiled(*args), model(*args))
        assert pack_count["n"] == 1
        model.weight[0, :] = -128  # an in-place update: packed again
        assert torch.equal(compiled(*args), model(*args))
        assert pack_count["n"] == 2


def test_conv_weights_are_packed_once(pack_count):
    """Under freezing a conv's weight is packed once: no relayout of it in the
    graph makes a new tensor (and so a new packing) on every call."""
    model, (x,) = example("resnet_block")
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": True})
        compiled(x)
        first = pack_count["n"]
        for _ in range(3):
            assert_close(compiled(x), model(x), "repeated call")
    assert first == 2 and pack_count["n"] == first


def test_instances_of_one_model_called_in_turn_keep_their_packed_weights(pack_count):
    """Dynamo serves every instance of a model class with one graph (parameters are
    inputs): under freezing each instance's weights are packed once, not again at
    every switch, and an in-place update of one instance is still seen."""
    from tessera.compiler.weight_cache import WEIGHTS_KEPT

    model, (x,) = example("resnet_block")
    models = [model, *(copy.deepcopy(model) for _ in range(WEIGHTS_KEPT - 1))]
    for m in models[1:]:
        for p in m.parameters():
            p.data.normal_(0.0, 0.1, generator=torch.Generator().manual_seed(p.numel()))
    with torch.no_grad():
        compiled = [torch.compile(m, backend="tessera", options={"freezing": True}) for m in models]
        for c, m in zip(compiled, models):
            assert_close(c(x), m(x), "first call")
        packed = pack_count["n"]
        for _ in range(2):
            for c, m in zip(compiled, models):
                assert_close(c(x), m(x), "called in turn")
        assert pack_count["n"] == packed
        models[1].conv1.weight.mul_(-0.5)
        assert_close(compiled[1](x), models[1](x), "after an in-place update of one instance")
        assert_close(compiled[0](x), models[0](x), "the other instance")


@pytest.mark.parametrize("freezing", [False, True])
def test_conv_weight_updated_in_place_is_packed_again(freezing):
    """Convs may keep their weight packed between calls (freezing); an in-place
    update of the parameter (same storage, new version) must be seen."""
    model, (x,) = example("resnet_block")
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", options={"freezing": freezing})
        assert_close(compiled(x), model(x), "before the update")
        model.conv1.weight.mul_(-0.5)
        assert_close(compiled(x), model(x), "after an in-place update of conv1's weight")


def test_inputs_not_as_placed_are_seen_after_the_fast_check_is_built():
    """A call checks that its inputs are as placed, after the first placed call through
    Dynamo's C++ tensor check; either way an input of other strides, shape or dtype (a
    parameter's ``.data`` swapped behind Dynamo's back) is relaid or the call says so."""
    from tessera.compiler.backend import GraphProgram
    from tessera.runtime.layouts import Placement

    x, w = torch.randn(2, 8, 5, 5), torch.randn(8, 8)
    seen = []

    class Run:
        inputs = [Placement.of(x), Placement.of(w)]
        outputs = ()

        def __call__(self, *xs):
            seen.append([t.stride() for t in xs])
            return [xs[0] + 1]

    graph = GraphProgram(None, [False], Run())
    for _ in range(3):
        assert graph._as_placed((x, w)) and graph(x, w)[0].equal(x + 1)
    assert graph._guard  # built on the first placed call
    cl = x.contiguous(memory_format=torch.channels_last)
    assert not graph._as_placed((cl, w)) and not graph._as_placed((x, w.t()))
    assert not graph._as_placed((x.double(), w)) and not graph._as_placed((x[:1], w))
    assert graph(cl, w)[0].equal(x + 1) and seen[-1][0] == x.stride()  # relaid before the run
    assert graph._as_placed((x.clone(), w.clone()))  # other tensors of the same placements


def test_a_dynamic_graphs_static_inputs_take_the_fast_check():
    """With an input of dynamic sizes (an ``OrderPlacement``) and a size among the inputs,
    the inputs of static placement (the parameters) are checked by Dynamo's C++ check,
    the dynamic one in Python: either may be the one placed otherwise."""
    from tessera.compiler.backend import GraphProgram
    from tessera.runtime.layouts import OrderPlacement, Placement

    w, b = torch.randn(8, 8), torch.randn(8)

    class Run:
        inputs = [None, OrderPlacement(torch.float32, (-1, 8), (0, 1)), Placement.of(w), Placement.of(b)]
        outputs = ()

        def __call__(self, n, x, w, b):
            return [x @ w + b]

    graph = GraphProgram(None, [False], Run())
    for n in (3, 5, 3):
        x = torch.randn(n, 8)
        assert graph._as_placed((n, x, w, b)) and graph(n, x, w, b)[0].equal(x @ w + b)
    assert graph._guard  # over the two parameters
    x = torch.randn(4, 8)
    assert not graph._as_placed((4, torch.randn(8, 4).t(), w, b))  # the dynamic input in another order
    assert not graph._as_placed((4, x, w.t(), b)) and not graph._as_placed((4, x, w, b.double()))
    assert not graph._as_placed((4, torch.randn(4, 9), w, b))  # a known size differs
    assert graph(4, x, w.t().contiguous().t(), b)[0].allclose(x @ w + b)  # relaid before the run


@pytest.mark.parametrize("channels", [8, 128])  # channels-last (packed weight) and contiguous convs on x86
def test_library_convs_return_the_layout_their_types_name(channels):
    """No hidden conversion: each conv's library call returns the layout the
    passes gave its result, so the host program stores nothing twice."""
    from tessera.compiler.capture import capture
    from tessera.compiler.backend import compile_kernels_of
    from tessera.compiler.context import make_context
    from tessera.compiler.fx_import import import_graph
    from tessera.compiler.pass_pipeline import build_pipeline
    from tessera.compiler import targets

    from pass_testing import random_inputs

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(channels, channels, 3, padding=1), torch.nn.SiLU()).eval()
    x = torch.randn(1, channels, 6, 6)
    module = import_graph(capture(model, (x,)).forward[0]).module
    build_pipeline(targets.get("x86").graph_pipeline()).apply(make_context(), module)
    host = compile_kernels_of(module, BackendOptions().compile_options(torch.device("cpu")))
    with torch.no_grad():
        host(*random_inputs(module))
    assert host.layout_fixups == []


@pytest.mark.parametrize("pool, dims", [(torch.nn.MaxPool2d(3, 2, 1), 2), (torch.nn.MaxPool3d(3, 2, 1), 3),
                                        (torch.nn.AvgPool2d(3, 2, 1), 2),
                                        (torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), 2)])
def test_pools_run_channels_last_between_convs(pool, dims):
    """An inference pool is its window slices' max or sum (``fx_import/pooling.py``),
    fused with the conv's ReLU into one kernel; between channels-last convs every op
    of it stays channels-last (no relayout, no layout fix-up), with eager's values,
    NaN included."""
    from tessera.compiler.backend import compile_kernels_of
    from tessera.compiler.capture import capture
    from tessera.compiler.context import make_context
    from tessera.compiler.fx_import import import_graph
    from tessera.compiler.pass_pipeline import build_pipeline
    from tessera.compiler import targets
    from tessera.dialects import tsr
    from tessera.dialects.tsr.layout import channels_last, layout_of

    from pass_testing import random_inputs

    conv = torch.nn.Conv2d if dims == 2 else torch.nn.Conv3d
    torch.manual_seed(0)
    model = torch.nn.Sequential(conv(16, 32, 3, padding=1), torch.nn.ReLU(), pool, conv(32, 32, 3, padding=1)).eval()
    x = torch.randn(1, 16, *(9,) * dims)
    x[0, 0, 0, 0] = float("nan")
    module = import_graph(capture(model, (x,)).forward[0]).module
    build_pipeline(targets.get("x86").graph_pipeline()).apply(make_context(), module)
    assert not [op for op in module.walk() if isinstance(op, tsr.AtenCallOp)]
    window = [op for op in module.walk() if isinstance(op, (tsr.PadOp, tsr.SliceOp, tsr.MaximumOp, tsr.AddOp))]
    assert window and all(layout_of(op.results[0].type) == channels_last(dims + 2) for op in window)
    relayouts = [op for op in module.walk() if isinstance(op, tsr.RelayoutOp)]
    assert len(relayouts) == 2, relayouts  # the graph's input and output only
    host = compile_kernels_of(module, BackendOptions().compile_options(torch.device("cpu")))
    with torch.no_grad():
        host(*random_inputs(module))
        got, want = torch.compile(model, backend="tessera", options={"strict": True})(x), model(x)
    assert want.isnan().any() and got.isnan().equal(want.isnan())
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)
    assert host.layout_fixups == []


def test_training_max_pool_computes_its_indices():
    """Backward reads the indices: the forward computes them beside the max (no
    ATen ``max_pool2d_with_indices``), and gradients match eager."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3), torch.nn.MaxPool2d(2)).train()
    x1 = torch.randn(2, 4, 10, 10, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    model(x1).square().sum().backward()
    g1 = x1.grad
    with collect_reports() as reports:
        torch.compile(copy.deepcopy(model), backend="tessera", options={"strict": True})(x2).square().sum().backward()
    assert_close(x2.grad, g1, "input gradient through the pool")
    assert {r.kind for r in reports} == {"forward", "backward"}
    assert not any("max_pool2d_with_indices." in k for r in reports for k in r.aten_ops), [r.summary() for r in reports]


_SPECIAL = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 1e-8, -1e-8, 1e-30, 0.0, -0.0, 1e-4, -0.3, -1.0, -0.9999999,
                         88.0, 89.0, -100.0, 1e20, 3e38, float("inf"), float("-inf"), float("nan")])


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fn", [torch.floor, torch.ceil, torch.trunc, torch.round, torch.log1p, torch.expm1, torch.isnan,
                                torch.logical_not, torch.sign],
                         ids=lambda f: f.__name__)
def test_rounding_and_near_zero_functions_compile_exactly_at_special_values(fn, dynamic):
    """Each compiles into one kernel (no ATen call) whose values are eager's to an ulp
    or two at halves (round: to even), near 0 (log1p(1e-8) is 1e-8, not log(1.0) = 0),
    at -1, at overflow, at the infinities and at NaN (logical_not: NaN is true; sign: 0)."""
    x = torch.cat([_SPECIAL, torch.randn(200) * 4])
    compiled = torch.compile(lambda t: fn(t * 1.0), backend="tessera", dynamic=dynamic, options={"strict": True})
    with collect_reports() as reports:
        got = compiled(x)
    assert [(r.kernels, dict(r.aten_ops)) for r in reports] == [(1, {})], [r.summary() for r in reports]
    torch.testing.assert_close(got, fn(x), rtol=2e-6, atol=1e-37, equal_nan=True)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool], ids=str)
def test_logical_ops_of_any_dtype_compile_on_truth(dtype, dynamic):
    """``logical_and``/``or``/``xor``/``not`` of non-boolean tensors are compares and selects
    on ``x != 0`` (NaN and -0.0: true and false), in kernels with no ATen call."""
    a = torch.tensor([0.0, -0.0, 1.0, float("nan"), -2.0, 0.5, 0.0, 3.0]).to(dtype)
    b = torch.tensor([1.0, 0.0, float("nan"), 0.0, -0.0, 2.0, 0.0, 3.0]).to(dtype)

    def f(x, y):
        return torch.logical_and(x, y), torch.logical_or(x, y), torch.logical_xor(x, y), torch.logical_not(x)

    compiled = torch.compile(f, backend="tessera", dynamic=dynamic, options={"strict": True})
    with collect_reports() as reports:
        got = compiled(a, b)
    assert [r.compiled and not r.aten_ops for r in reports] == [True], [r.summary() for r in reports]
    for g, w in zip(got, f(a, b), strict=True):
        assert torch.equal(g, w), (g, w)
