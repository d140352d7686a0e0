"""``fold-relayouts-into-convs``: a conv tessera's kernel computes reads its
NCHW input directly where the contiguous-input rules of the conv kernel cost
model say so (interpreted before and after the pass; compiled, equal to eager)."""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.targets.x86 import conv_choice as host
from tessera.dialects import tsr

from conftest import record_launches
from pass_testing import check_pass, parse, tensor_type as T


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def graph(cin: int, cout: int = 32, kernel: int = 3, elem: str = "f32", reuse: bool = False) -> str:
    """``conv(relayout(x))``, ``x`` NCHW; with ``reuse`` the relayout also feeds an add."""
    x, xn = T((1, cin, 10, 12), elem, "nchw"), T((1, cin, 10, 12), elem, "nhwc")
    w, y = T((cout, cin, kernel, kernel), elem), T((1, cout, 10, 12), elem, "nhwc")
    pad = kernel // 2
    attrs = (f"{{stride = array<i64: 1, 1>, padding = array<i64: {pad}, {pad}>, dilation = array<i64: 1, 1>, "
             f"groups = 1 : i64, activation = \"relu\"}}")
    extra = f"  %z = tsr.add %xn, %xn : ({xn}, {xn}) -> {xn}\n  func.return %y, %z : {y}, {xn}" if reuse else \
        f"  func.return %y : {y}"
    results = f"{y}, {xn}" if reuse else y
    return f"""
func.func @forward(%x: {x}, %w: {w}, %b: {T([cout], elem)}) -> ({results}) {{
  %xn = tsr.relayout %x : ({x}) -> {xn}
  %y = tsr.conv %xn, %w, %b {attrs} : ({xn}, {w}, {T([cout], elem)}) -> {y}
{extra}
}}"""


@pytest.fixture
def kernel_host():
    if host.host_isa() is None:
        pytest.skip("this CPU runs no conv kernel path")


def test_conv_reads_nchw_input_directly(kernel_host):
    after = check_pass(parse(graph(32)), "fold-relayouts-into-convs{target=x86}")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.input is conv.parent_block().args[0]
    assert not ops(after, tsr.RelayoutOp) and conv.activation_name() == "relu" and conv.bias is not None


def test_relayout_with_other_users_stays(kernel_host):
    after = check_pass(parse(graph(32, reuse=True)), "fold-relayouts-into-convs{target=x86}")
    (conv,) = ops(after, tsr.ConvOp)
    (relayout,) = ops(after, tsr.RelayoutOp)
    assert conv.input is relayout.input and {type(u.operation) for u in relayout.result.uses} == {tsr.AddOp}


@pytest.mark.parametrize("cin,elem", [(128, "f32"), (32, "bf16")])
def test_kept_where_the_cost_model_says_the_relayout_pays(kernel_host, cin, elem):
    """More than 64 input channels, or not f32: the relayout stays."""
    after = check_pass(parse(graph(cin, elem=elem)), "fold-relayouts-into-convs{target=x86}")
    (conv,) = ops(after, tsr.ConvOp)
    assert isinstance(conv.input.owner, tsr.RelayoutOp)


@pytest.mark.parametrize("cin", [3, 8])
def test_a_stem_of_few_channels_reads_the_nchw_input(kernel_host, cin):
    """A conv of fewer than 16 input channels (a network's first) reads its NCHW input itself."""
    after = check_pass(parse(graph(cin)), "fold-relayouts-into-convs{target=x86}")
    (conv,) = ops(after, tsr.ConvOp)
    assert not ops(after, tsr.RelayoutOp) and not isinstance(conv.input.owner, tsr.RelayoutOp)


def test_compiled_model_reads_its_nchw_input_in_the_first_conv(kernel_host):
    """The first conv of an NCHW model (32 channels) runs on tessera's kernel
    reading the input as given; the result equals eager's."""

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 16, 1)).eval()
    x = torch.randn(2, 32, 9, 13)
    with torch.no_grad(), pytest.MonkeyPatch.context() as mp:
        launched = record_launches(mp)
        torch._dynamo.reset()
        got = torch.compile(model, backend="tessera")(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    assert any(n.startswith("conv2d_") and n.endswith("_xcontig") for n in launched), launched


def _conv_then_relayout(cin: int, elem: str = "f32") -> str:
    x, w = T((1, cin, 10, 12), elem, "nhwc"), T((32, cin, 3, 3), elem)
    y, z = T((1, 32, 10, 12), elem, "nhwc"), T((1, 32, 10, 12), elem, "nchw")
    attrs = ("{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, "
             "activation = \"silu\"}")
    return f"""
func.func @forward(%x: {x}, %w: {w}, %b: {T([32], elem)}) -> {z} {{
  %y = tsr.conv %x, %w, %b {attrs} : ({x}, {w}, {T([32], elem)}) -> {y}
  %z = tsr.relayout %y : ({y}) -> {z}
  func.return %z : {z}
}}"""


def test_conv_writes_nchw_output_directly(kernel_host):
    after = check_pass(parse(_conv_then_relayout(32)), "fold-relayouts-into-convs{target=x86}")
    (conv,) = ops(after, tsr.ConvOp)
    assert not ops(after, tsr.RelayoutOp) and conv.result.type == conv.parent_block().last_op.operands[0].type
    assert host.kernel_layout(conv.result) == "contiguous" and conv.activation_name() == "silu"


def test_output_relayout_kept_where_the_cost_model_says_it_pays(kernel_host):
    after = check_pass(parse(_conv_then_relayout(8)), "fold-relayouts-into-convs{target=x86}")  # < 16 input channels
    assert ops(after, tsr.RelayoutOp) and host.kernel_layout(ops(after, tsr.ConvOp)[0].result) == "channels_last"


def test_resnet_shortcut_in_nchw_becomes_the_convs_residual(kernel_host):
    """``relu(conv_nhwc + x_nchw) -> nchw``: one conv writing NCHW, reading x as it is."""
    x, y, w = T((1, 32, 10, 12), "f32", "nchw"), T((1, 32, 10, 12), "f32", "nhwc"), T((32, 32, 3, 3))
    text = f"""
func.func @forward(%x: {x}, %y1: {y}, %w: {w}) -> {x} {{
  %y = tsr.conv %y1, %w {{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : ({y}, {w}) -> {y}
  %s = tsr.add %y, %x : ({y}, {x}) -> {x}
  %r = tsr.relu %s : ({x}) -> {x}
  func.return %r : {x}
}}"""
    after = check_pass(parse(text), "fuse-conv-residuals{target=x86},fuse-conv-epilogues")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.residual_input is conv.parent_block().args[0] and conv.result.type == conv.residual_input.type
    assert conv.activation_name() == "relu" and not ops(after, tsr.RelayoutOp) and not ops(after, tsr.AddOp)


def test_compiled_resnet_block_is_two_conv_launches(kernel_host):
    """At 32 channels the ResNet block (BatchNorms folded: freezing) is two launches of tessera's kernel: the first
    reads the NCHW input, the second adds the NCHW shortcut, applies the ReLU and
    writes the NCHW output; equal to eager. With ``conv_kernels=False`` every conv is
    oneDNN's and the result is the same."""
    from conftest import load_example_module

    block = load_example_module("resnet_block").make_block(32)
    x = torch.randn(2, 32, 9, 13)
    import tessera.compiler.targets.x86.conv_choice as choice

    with torch.no_grad(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(choice, "prefers_winograd", lambda conv, tiles, isa: None)  # the direct kernel's folds (24 tiles)
        launched = record_launches(mp)
        for options in ({"freezing": True}, {"freezing": True, "conv_kernels": False}):
            torch._dynamo.reset()
            launched.clear()
            got = torch.compile(block, backend="tessera", options=options)(x)
            torch.testing.assert_close(got, block(x), rtol=1e-4, atol=1e-4)
            convs = [n for n in launched if n.startswith("conv2d_")]
            if "conv_kernels" in options:
                assert not convs
            else:
                # before the convs: the folded BatchNorm weights, prepared once (weight_preparation),
                # and each conv's weight packed by its packing kernel (once: freezing)
                runs = [n for n in launched if not n.startswith("conv_pack_")]
                assert runs[-2:] == convs and len(convs) == 2, launched
                assert len(launched) - len(runs) == 2, launched
                assert convs[0].endswith("_relu_xcontig") and convs[1].endswith("_res_relu_ycontig"), launched
    torch._dynamo.reset()
