"""``fold-relayouts-into-convs``: a conv tessera's kernel computes reads its
NCHW input directly where the contiguous-input rules of the conv kernel cost
model say so (interpreted before and after the pass; compiled, equal to eager)."""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.codegen.conv import host
from tessera.dialects import tsr

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
    if host._host_isa() is None:
        pytest.skip("this CPU runs no conv kernel path")


def test_conv_reads_nchw_input_directly(kernel_host):
    after = check_pass(parse(graph(32)), "fold-relayouts-into-convs")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.input is conv.parent_block().args[0]
    assert not ops(after, tsr.RelayoutOp) and conv.activation_name() == "relu" and conv.bias is not None


def test_relayout_with_other_users_stays(kernel_host):
    after = check_pass(parse(graph(32, reuse=True)), "fold-relayouts-into-convs")
    (conv,) = ops(after, tsr.ConvOp)
    (relayout,) = ops(after, tsr.RelayoutOp)
    assert conv.input is relayout.input and {type(u.operation) for u in relayout.result.uses} == {tsr.AddOp}


@pytest.mark.parametrize("cin,elem", [(8, "f32"), (128, "f32"), (32, "bf16")])
def test_kept_where_the_cost_model_says_the_relayout_pays(kernel_host, cin, elem):
    """Fewer than 16 or more than 64 input channels, or not f32: the relayout stays."""
    after = check_pass(parse(graph(cin, elem=elem)), "fold-relayouts-into-convs")
    (conv,) = ops(after, tsr.ConvOp)
    assert isinstance(conv.input.owner, tsr.RelayoutOp)


def test_compiled_model_reads_its_nchw_input_in_the_first_conv(kernel_host):
    """The first conv of an NCHW model (32 channels) runs on tessera's kernel
    reading the input as given; the result equals eager's."""

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 16, 1)).eval()
    x = torch.randn(2, 32, 9, 13)
    launched = []
    from tessera.runtime.kernel import Kernel

    original = Kernel.launch

    def recording(self, *tensors, **kw):
        launched.append(self.name)
        return original(self, *tensors, **kw)

    with torch.no_grad(), pytest.MonkeyPatch.context() as mp:
        mp.setattr(Kernel, "launch", recording)
        torch._dynamo.reset()
        got = torch.compile(model, backend="tessera")(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()
    assert any(n.startswith("conv2d_") and n.endswith("_xcontig") for n in launched), launched
