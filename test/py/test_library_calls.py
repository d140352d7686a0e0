"""The library calls a CPU host program makes (``compiler/library_calls.py``)."""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.ir_io import parse_module
from tessera.compiler.library_calls import OneDnnConv, pointwise_gemm
from tessera.dialects import tsr

CL = torch.channels_last


def _conv(x: str, w: str, y: str) -> OneDnnConv:
    module = parse_module(f"""
    func.func @f(%x: {x}, %w: {w}, %b: tensor<160xf32>) -> {y} {{
      %y = tsr.conv %x, %w, %b {{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : ({x}, {w}, tensor<160xf32>) -> {y}
      func.return %y : {y}
    }}""")
    return OneDnnConv(next(op for op in module.walk() if isinstance(op, tsr.ConvOp)))


@pytest.mark.parametrize("out_layout", ["nhwc", "nchw"])
def test_a_weight_bound_1x1_conv_is_one_gemm_on_the_plain_weight(out_layout):
    """Without freezing, a 1x1 conv whose weight outweighs its output (960 -> 160 at
    2x2) is a GEMM on the plain weight, over channels-last rows or per image;
    its result in the layout its type names, NaN kept."""
    x_t = "tensor<8x960x2x2xf32, #tsr.layout<nhwc>>"
    y_t = f"tensor<8x160x2x2xf32, #tsr.layout<{out_layout}>>"
    conv = _conv(x_t, "tensor<160x960x1x1xf32>", y_t)
    assert conv.weight_bound and conv.pointwise
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(160, 960, 1, 1, generator=g), torch.randn(160, generator=g)
    for fmt in (CL, torch.contiguous_format):
        x = torch.randn(8, 960, 2, 2, generator=g).contiguous(memory_format=fmt)
        x[1, 5, 0, 1] = float("nan")
        with torch.no_grad():
            got = conv(x, w, b)
        want = torch.nn.functional.conv2d(x, w, b)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4, equal_nan=True)
        assert got[1].isnan().all(dim=0)[0, 1] and not got[0].isnan().any()
        assert got.is_contiguous(memory_format=CL if out_layout == "nhwc" else torch.contiguous_format)


def test_a_weight_bound_1x1_conv_adds_its_residual_then_its_activation():
    x_t, y_t = "tensor<8x960x2x2xf32, #tsr.layout<nhwc>>", "tensor<8x160x2x2xf32, #tsr.layout<nhwc>>"
    module = parse_module(f"""
    func.func @f(%x: {x_t}, %w: tensor<160x960x1x1xf32>, %b: tensor<160xf32>, %r: {y_t}) -> {y_t} {{
      %y = tsr.conv %x, %w, %b, %r {{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, activation = "relu", residual}} : ({x_t}, tensor<160x960x1x1xf32>, tensor<160xf32>, {y_t}) -> {y_t}
      func.return %y : {y_t}
    }}""")
    conv = OneDnnConv(next(op for op in module.walk() if isinstance(op, tsr.ConvOp)))
    assert conv.weight_bound and conv.pointwise
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 960, 2, 2, generator=g).contiguous(memory_format=CL)
    w, b = torch.randn(160, 960, 1, 1, generator=g), torch.randn(160, generator=g)
    r = torch.randn(8, 160, 2, 2, generator=g)
    with torch.no_grad():
        got = conv(x, w, b, r)
    torch.testing.assert_close(got, torch.relu(torch.nn.functional.conv2d(x, w, b) + r), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(0, 16, 3, 3), (2, 16, 1, 1, 1), (3, 16, 5, 7)])
def test_pointwise_gemm_of_an_empty_batch_and_a_3d_conv(shape):
    x = torch.randn(shape)
    w = torch.randn(8, shape[1], *([1] * (len(shape) - 2)))
    want = torch.nn.functional.conv2d(x, w) if len(shape) == 4 else torch.nn.functional.conv3d(x, w)
    for fmt in ([CL] if len(shape) == 4 else [torch.channels_last_3d]) + [torch.contiguous_format]:
        torch.testing.assert_close(pointwise_gemm(x.contiguous(memory_format=fmt), w, None), want)
