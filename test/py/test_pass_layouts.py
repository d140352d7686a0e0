"""The layout passes (assign-, hoist-, cancel-, fuse-relayouts) and the target
pipelines: interpreter outputs before and after agree (lit cases, the example
models forward and backward, hypothesis-generated graphs), and on the
conv-heavy examples every conv runs in the layout the cost model picks with
relayouts left only at the graph's boundaries."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import BlockArgument

from tessera.compiler.capture import capture
from tessera.passes.target_models import MIN_GAIN, ConvShape, Rule, prefers_channels_last, rule_for
from tessera.compiler.fx_import import import_graph
from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, layout_of
from tessera.compiler import targets
from tessera.passes.layout_agnostic import moved_dims

from conftest import example
from pass_testing import apply_pass, assert_same_outputs, check_pass, function_names, parse, tensor_type

LIT = Path(__file__).resolve().parents[1] / "lit" / "passes"
PIPELINE_SPECS = {t.name: ",".join(t.graph_pipeline()) for t in targets.all_targets()}


# --- each pass on its lit cases ---------------------------------------------------------------

@pytest.mark.parametrize("file,spec", [
    ("assign-layouts.mlir", "assign-layouts{target=x86}"),
    ("assign-layouts.mlir", "assign-layouts{target=metal}"),
    ("assign-layouts.mlir", "assign-layouts{target=ptx}"),
    ("hoist-relayouts.mlir", "hoist-relayouts"),
    ("fuse-relayouts.mlir", "fuse-relayouts"),
    ("cancel-relayouts.mlir", "cancel-relayouts"),
    ("fuse-int-mm-epilogues.mlir", "fuse-int-mm-epilogues"),
    ("hoist-relayouts.mlir", PIPELINE_SPECS["x86"]),
    ("fuse-relayouts.mlir", PIPELINE_SPECS["x86"]),
])
def test_lit_cases_keep_their_outputs(file, spec):
    module = parse((LIT / file).read_text())
    check_pass(module, spec, seeds=(0, 1), functions=function_names(module))


def test_moved_dims():
    assert moved_dims((0, 1, 2, 3), (0, 2, 3, 1)) == {1}
    assert moved_dims((0, 2, 3, 4, 1), (0, 1, 2, 3, 4)) == {1}
    assert moved_dims((0, 1), (1, 0)) == {0, 1}
    assert moved_dims((0, 1, 2), (0, 1, 2)) == set()


def test_cost_model_classifies_convs():
    """Each conv falls in the class its shape says (first matching rule); the
    classes' measured speedups live in the table, not in this test."""
    what = {
        ConvShape(3, "f32", 32, 32, 1, (3, 3, 3), (1, 1, 1)): "f32 conv3d",
        ConvShape(2, "f32", 128, 128, 1, (3, 3), (1, 1)):
            "f32 dense 3x3 conv2d, >= 128 input channels, stride 1 (Winograd's class)",
        ConvShape(2, "f32", 128, 128, 1, (5, 5), (1, 1)): "f32 dense wider conv2d, >= 128 input channels",
        ConvShape(2, "f32", 128, 128, 1, (3, 3), (2, 2)): "f32 conv2d",  # strided
        ConvShape(2, "f32", 128, 128, 1, (1, 1), (1, 1)): "f32 conv2d",  # 1x1
        ConvShape(1, "f32", 8, 8, 1, (3,), (1,)): "conv1d",
        ConvShape(2, "bf16", 128, 128, 1, (3, 3), (1, 1)): "bf16/f16 conv",
        ConvShape(2, "f32", 128, 128, 128, (3, 3), (1, 1)): "f32 conv2d",  # depthwise
        ConvShape(2, "f32", 96, 96, 32, (3, 3), (1, 1)): "f32 grouped conv2d, < 16 channels per group",
        ConvShape(2, "f32", 128, 128, 32, (3, 3), (1, 1)):  # ResNeXt 32x4d's 4 per group
            "f32 grouped conv2d, 2 or 4 channels per group (tessera's channelwise kernel, channels-last)",
        ConvShape(2, "f32", 104, 104, 13, (3, 3), (1, 1)):  # RegNetY's 8 per group
            "f32 grouped conv2d, 8-15 channels per group (tessera's kernel, channels-last)",
        ConvShape(2, "f32", 128, 128, 8, (3, 3), (1, 1)): "f32 conv2d",  # 16 per group
    }
    for conv, name in what.items():
        assert rule_for("x86", conv).what == name, conv
    assert rule_for("ptx", ConvShape(2, "f16", 128, 128, 1, (3, 3), (1, 1))).what.startswith("f16/bf16")
    assert rule_for("metal", ConvShape(3, "f32", 8, 8, 1, (3, 3, 3), (1, 1, 1))).what == "conv3d"


def test_cost_model_decides_by_the_measured_gain(monkeypatch):
    """Channels-last exactly when the class's speedup reaches MIN_GAIN."""
    import dataclasses

    import tessera.passes.target_models as model

    conv = ConvShape(2, "f32", 64, 64, 1, (3, 3), (1, 1))
    for speedup, expected in ((MIN_GAIN - 0.01, False), (MIN_GAIN, True), (2.0, True), (0.5, False)):
        table = (Rule("t", lambda c: True, speedup),)
        models = dataclasses.replace(model.target_models("x86"), conv_layouts=table)
        monkeypatch.setitem(model._MODELS, "x86", lambda models=models: models)
        assert prefers_channels_last("x86", conv) is expected, speedup


# --- the example models -----------------------------------------------------------------------

@functools.cache
def _graphs(name: str, training: bool):
    model, args = example(name)
    cg = capture(model, args, training=training)
    return [import_graph(gm).module for gm in (*cg.forward, *cg.backward)]


def relayouts(module) -> list[tsr.RelayoutOp]:
    return [op for op in module.walk() if isinstance(op, tsr.RelayoutOp)]


def interior_relayouts(module) -> list[tsr.RelayoutOp]:
    """Relayouts that neither read a graph input (or a constant) nor feed only the return."""
    return [
        op for op in relayouts(module)
        if not isinstance(op.input, BlockArgument)
        and not isinstance(op.input.owner, tsr.ConstantOp)
        and not all(isinstance(u.operation, func.ReturnOp) for u in op.result.uses)
    ]


@pytest.mark.parametrize("target", ["x86", "ptx", "metal"])
@pytest.mark.parametrize("name", ["video_vae_block", "vae2d_block", "resnet_block", "unet_block", "mlp"])
@pytest.mark.parametrize("training", [False, True])
def test_pipeline_keeps_example_outputs(name, target, training):
    for module in _graphs(name, training):
        after = apply_pass(module, PIPELINE_SPECS[target])
        assert_same_outputs(module, after, rtol=1e-4)


@pytest.mark.parametrize("name,assigned,left", [
    # 3 convs: input, weight, result each; left: none (the weights' go into the convs' packing, and
    # the output's into the polyphase interleave that fold-upsample-into-conv puts after the last conv)
    ("video_vae_block", 9, 0),
    ("vae2d_block", 9, 0),
    ("resnet_block", 6, 1),  # left: the input
])
def test_conv_examples_run_channels_last_with_boundary_relayouts_only(name, assigned, left):
    (module,) = _graphs(name, False)
    after_assign = apply_pass(module, "cast-constants,assign-layouts{target=x86}")
    after = apply_pass(module, PIPELINE_SPECS["x86"])
    convs = [op for op in after.walk() if isinstance(op, tsr.ConvOp)]
    assert convs
    for conv in convs:
        rank = len(conv.result.type.get_shape())
        for v in (conv.input, conv.result):
            assert layout_of(v.type) == channels_last(rank), conv
    assert len(relayouts(after_assign)) == assigned
    assert len(relayouts(after)) == left
    assert interior_relayouts(after) == []


class _ResidualStageIntoPool(torch.nn.Module):
    """The last stage of a ResNet: bottleneck-free residual blocks, a global mean, a linear."""

    def __init__(self, c: int = 64):
        super().__init__()
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(c, c, 3, padding=1) for _ in range(3))
        self.fc = torch.nn.Linear(c, 10)

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(x + conv(x))
        return self.fc(x.mean((2, 3)))


def test_residual_chain_into_a_global_pool_computes_channels_last():
    """The adds and relus between channels-last convs compute channels-last all
    the way into the pool (which reads them as they are): the only relayout left
    is the input's. Before the pool chose its layout, each add wrote nchw and
    each next conv read it through a transpose."""
    torch.manual_seed(0)
    model, x = _ResidualStageIntoPool().eval(), torch.randn(1, 64, 14, 14)
    (module,) = [import_graph(gm).module for gm in capture(model, (x,)).forward]
    after = apply_pass(module, PIPELINE_SPECS["x86"])
    assert_same_outputs(module, after, rtol=1e-4)
    assert interior_relayouts(after) == []
    for op in after.walk():
        if isinstance(op, (tsr.AddOp, tsr.ReluOp, tsr.MeanOp)):
            operand = op.operands[0] if isinstance(op, tsr.MeanOp) else op.results[0]
            assert layout_of(operand.type) == channels_last(4), op


# --- hypothesis-generated graphs of pads, elementwise ops, convs and relayouts ----------------

@st.composite
def layout_graphs(draw):
    """A random chain over one 4-D or 5-D activation: unary and binary ops (with
    a broadcast operand or an earlier value), pads, relayouts, convs with
    weight arguments, spatial means; each result in a random layout."""
    rank = draw(st.sampled_from([4, 5]))
    c = draw(st.sampled_from([2, 3, 4]))
    shape = (draw(st.sampled_from([1, 2])), c, *(draw(st.integers(2, 4)) for _ in range(rank - 2)))
    perms = [tuple(range(rank)), channels_last(rank), tuple(reversed(range(rank)))]
    layout = lambda: draw(st.sampled_from(perms))  # noqa: E731
    args = [("x", shape, layout())]
    values = [("%x", shape, args[0][2])]
    body = ["%zero = tsr.constant 0.000000e+00 : f32", "%two = tsr.constant 2.000000e+00 : f32"]
    for i in range(draw(st.integers(1, 7))):
        name, shp, perm = values[-1]
        ty = tensor_type(shp, "f32", perm)
        kind = draw(st.sampled_from(["unary", "scalar", "bcast", "binary", "pad", "relayout", "relayout", "conv", "mean"]))
        out_perm = perm if kind == "relayout" else layout()
        if kind == "relayout":
            out_perm = draw(st.sampled_from([p for p in perms if p != perm]))
        new = f"%v{i}"
        out_shape = shp
        if kind == "unary":
            op = draw(st.sampled_from(["silu", "neg", "tanh"]))
            line = f"{new} = tsr.{op} {name} : ({ty})"
        elif kind == "scalar":
            line = f"{new} = tsr.mul {name}, %two : ({ty}, f32)"
        elif kind == "bcast":
            bshape = (1, shp[1], *([1] * (rank - 2)))
            args.append((f"b{i}", bshape, tuple(range(rank))))
            line = f"{new} = tsr.add {name}, %b{i} : ({ty}, {tensor_type(bshape, 'f32', tuple(range(rank)))})"
        elif kind == "binary":
            same = [v for v in values if v[1] == shp]
            oname, _, operm = draw(st.sampled_from(same))
            line = f"{new} = tsr.sub {name}, {oname} : ({ty}, {tensor_type(shp, 'f32', operm)})"
        elif kind == "pad":
            low = [0, 0, *(draw(st.integers(0, 2)) for _ in range(rank - 2))]
            high = [0, 0, *(draw(st.integers(0, 1)) for _ in range(rank - 2))]
            out_shape = tuple(s + lo + hi for s, lo, hi in zip(shp, low, high))
            line = (f"{new} = tsr.pad {name}, %zero {{low = array<i64: {', '.join(map(str, low))}>, "
                    f"high = array<i64: {', '.join(map(str, high))}>}} : ({ty}, f32)")
        elif kind == "relayout":
            line = f"{new} = tsr.relayout {name} : ({ty})"
        elif kind == "conv":
            k = draw(st.sampled_from([1, 3]))
            wshape = (shp[1], shp[1], *([k] * (rank - 2)))
            args.append((f"w{i}", wshape, layout()))
            n = rank - 2
            arr = lambda v: "array<i64: " + ", ".join([str(v)] * n) + ">"  # noqa: E731
            line = (f"{new} = tsr.conv {name}, %w{i} {{stride = {arr(1)}, padding = {arr(k // 2)}, "
                    f"dilation = {arr(1)}, groups = 1 : i64}} : ({ty}, {tensor_type(wshape, 'f32', args[-1][2])})")
        else:  # mean over the spatial dims
            dims = ", ".join(str(d) for d in range(2, rank))
            out_shape = (*shp[:2], *([1] * (rank - 2)))
            line = f"{new} = tsr.mean {name} {{dims = array<i64: {dims}>, keepdim = true}} : ({ty})"
        body.append(f"{line} -> {tensor_type(out_shape, 'f32', out_perm)}")
        values.append((new, out_shape, out_perm))
    results = [values[-1]]
    if len(values) > 2 and draw(st.booleans()):
        results.append(draw(st.sampled_from(values[1:-1])))  # an intermediate is also an output
    sig = ", ".join(f"%{n}: {tensor_type(s, 'f32', p)}" for n, s, p in args)
    rtypes = ", ".join(tensor_type(s, "f32", p) for _, s, p in results)
    ret = f"func.return {', '.join(n for n, _, _ in results)} : {rtypes}"
    lines = "\n  ".join([*body, ret])
    return f"func.func @forward({sig}) -> ({rtypes}) {{\n  {lines}\n}}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout_graphs(), st.sampled_from([
    "assign-layouts{target=x86}", "hoist-relayouts", "fuse-relayouts", PIPELINE_SPECS["x86"], PIPELINE_SPECS["metal"],
]))
def test_random_graphs_keep_their_outputs(text, spec):
    module = parse(text)
    after = apply_pass(module, spec)
    assert_same_outputs(module, after, rtol=1e-4)
    if spec == PIPELINE_SPECS["x86"]:
        assert interior_relayouts_between_kernels(after) == []


def interior_relayouts_between_kernels(module) -> list[tsr.RelayoutOp]:
    """After the pipeline, a relayout that is not at a boundary sits between two
    library ops (conv -> conv): one with a kernel op on either side was fused."""
    from tessera.dialects.tsr.op_classes import is_kernel_op

    return [
        op for op in interior_relayouts(module)
        if (is_kernel_op(op.input.owner) and op.input.has_one_use())
        or all(is_kernel_op(u.operation) and not isinstance(u.operation, tsr.RelayoutOp) for u in op.result.uses)
    ]
