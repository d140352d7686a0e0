"""``fold-affine-into-conv`` and ``fuse-conv-epilogues``: an eval BatchNorm
folds into the conv before it and a ReLU/SiLU after a conv becomes its
activation; same results interpreted before and after each pass, and
compiled end to end against eager (the folded weight prepared once per
parameter version, and again after an in-place update)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tessera.dialects import tsr

from pass_testing import check_pass, parse, tensor_type

X, W, Y = (1, 4, 6, 6), (5, 4, 3, 3), (1, 5, 4, 4)
CONV = ("{stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64}"
        f" : ({tensor_type(X)}, {tensor_type(W)}) -> {tensor_type(Y)}")


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def batchnorm_module(elem: str = "f32") -> str:
    t = lambda s: tensor_type(s, elem)  # noqa: E731
    return f"""
func.func @forward(%x: {t(X)}, %w: {t(W)}, %mean: {t([5])}, %var: {t([5])}, %gamma: {t([5])}, %beta: {t([5])}) -> {t(Y)} {{
  %eps = tsr.constant 1.000000e-05 : {elem}
  %y = tsr.conv %x, %w {CONV.replace("f32", elem)}
  %m = tsr.reshape %mean : ({t([5])}) -> {t([5, 1, 1])}
  %c = tsr.sub %y, %m : ({t(Y)}, {t([5, 1, 1])}) -> {t(Y)}
  %ve = tsr.add %var, %eps : ({t([5])}, {elem}) -> {t([5])}
  %r = tsr.rsqrt %ve : ({t([5])}) -> {t([5])}
  %r3 = tsr.reshape %r : ({t([5])}) -> {t([5, 1, 1])}
  %n = tsr.mul %c, %r3 : ({t(Y)}, {t([5, 1, 1])}) -> {t(Y)}
  %g = tsr.reshape %gamma : ({t([5])}) -> {t([1, 5, 1, 1])}
  %s = tsr.mul %g, %n : ({t([1, 5, 1, 1])}, {t(Y)}) -> {t(Y)}
  %b = tsr.reshape %beta : ({t([5])}) -> {t([5, 1, 1])}
  %o = tsr.add %s, %b : ({t(Y)}, {t([5, 1, 1])}) -> {t(Y)}
  func.return %o : {t(Y)}
}}"""


def test_batchnorm_folds_into_the_conv():
    after = check_pass(parse(batchnorm_module()), "fold-affine-into-conv")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.bias is not None
    returned = [op for op in after.walk() if op.name == "func.return"][0]
    assert returned.operands[0] is conv.result  # nothing left between the conv and the output


def test_affine_of_activations_or_non_f32_stays():
    scaled_by_activation = f"""
func.func @forward(%x: {tensor_type(X)}, %w: {tensor_type(W)}) -> {tensor_type(Y)} {{
  %y = tsr.conv %x, %w {CONV}
  %y2 = tsr.conv %x, %w {CONV}
  %s = tsr.amax %y2 {{dims = array<i64: 0, 2, 3>, keepdim = true}} : ({tensor_type(Y)}) -> {tensor_type([1, 5, 1, 1])}
  %z = tsr.mul %y, %s : ({tensor_type(Y)}, {tensor_type([1, 5, 1, 1])}) -> {tensor_type(Y)}
  func.return %z : {tensor_type(Y)}
}}"""
    after = check_pass(parse(scaled_by_activation), "fold-affine-into-conv")  # a scale read from a conv's output
    assert ops(after, tsr.MulOp)
    after = check_pass(parse(batchnorm_module("bf16")), "fold-affine-into-conv")
    assert ops(after, tsr.MulOp) and ops(after, tsr.SubOp)


@pytest.mark.parametrize("act", ["relu", "silu"])
def test_activation_becomes_the_convs(act):
    text = f"""
func.func @forward(%x: {tensor_type(X)}, %w: {tensor_type(W)}) -> {tensor_type(Y)} {{
  %y = tsr.conv %x, %w {CONV}
  %a = tsr.{act} %y : ({tensor_type(Y)}) -> {tensor_type(Y)}
  func.return %a : {tensor_type(Y)}
}}"""
    after = check_pass(parse(text), "fuse-conv-epilogues")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.activation_name() == act and not ops(after, tsr.ReluOp) and not ops(after, tsr.SiluOp)


@pytest.mark.parametrize("low,high,fused", [(0.0, 6.0, True), (0.0, 5.0, False), (-1.0, 6.0, False)])
def test_relu6_clamp_becomes_the_convs(low, high, fused):
    """ReLU6 as ATen decomposes it (maximum with 0, then minimum with 6); other bounds stay ops."""
    t = tensor_type(Y)
    text = f"""
func.func @forward(%x: {tensor_type(X)}, %w: {tensor_type(W)}) -> {t} {{
  %lo = tsr.constant {low} : f32
  %hi = tsr.constant {high} : f32
  %y = tsr.conv %x, %w {CONV}
  %m = tsr.maximum %y, %lo : ({t}, f32) -> {t}
  %a = tsr.minimum %m, %hi : ({t}, f32) -> {t}
  func.return %a : {t}
}}"""
    after = check_pass(parse(text), "fuse-conv-epilogues")
    (conv,) = ops(after, tsr.ConvOp)
    assert (conv.activation_name() == "relu6") is fused
    assert bool(ops(after, tsr.MinimumOp) or ops(after, tsr.MaximumOp)) is not fused


def test_the_fusion_step_can_leave_the_pass_out():
    from tessera.compiler.stage_io import CompileOptions
    from tessera.compiler.stages import fuse_kernels

    text = f"""
func.func @forward(%x: {tensor_type(X)}, %w: {tensor_type(W)}) -> {tensor_type(Y)} {{
  %y = tsr.conv %x, %w {CONV}
  %a = tsr.relu %y : ({tensor_type(Y)}) -> {tensor_type(Y)}
  func.return %a : {tensor_type(Y)}
}}"""
    assert ops(fuse_kernels(parse(text), "x86"), tsr.ConvOp)[0].activation_name() == "relu"
    assert ops(fuse_kernels(parse(text), CompileOptions("x86", disable=("fuse-conv-epilogues",))), tsr.ConvOp)[0].activation is None


def test_activation_of_a_conv_used_twice_stays():
    text = f"""
func.func @forward(%x: {tensor_type(X)}, %w: {tensor_type(W)}) -> ({tensor_type(Y)}, {tensor_type(Y)}) {{
  %y = tsr.conv %x, %w {CONV}
  %a = tsr.relu %y : ({tensor_type(Y)}) -> {tensor_type(Y)}
  func.return %a, %y : {tensor_type(Y)}, {tensor_type(Y)}
}}"""
    after = check_pass(parse(text), "fuse-conv-epilogues")
    assert ops(after, tsr.ReluOp) and ops(after, tsr.ConvOp)[0].activation is None


class ConvBnAct(nn.Module):
    def __init__(self, act: nn.Module, dims: int = 2):
        super().__init__()
        conv, bn = (nn.Conv2d, nn.BatchNorm2d) if dims == 2 else (nn.Conv3d, nn.BatchNorm3d)
        self.conv, self.bn, self.act = conv(6, 8, 3, padding=1, bias=dims == 3), bn(8), act

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


@pytest.mark.parametrize("act, dims, channels_last", [
    (nn.ReLU(), 2, True), (nn.SiLU(), 2, False), (nn.ReLU(), 3, True), (nn.Identity(), 2, True), (nn.ReLU6(), 2, True)])
def test_compiled_conv_bn_act_matches_eager(act, dims, channels_last, prepare_count):
    torch.manual_seed(0)
    model = ConvBnAct(act, dims).eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-0.5, 0.5)
    x = torch.randn((2, 6, 9, 7) if dims == 2 else (1, 6, 3, 5, 6))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last if dims == 2 else torch.channels_last_3d)
    compiled = torch.compile(model, backend="tessera", options={"freezing": True})
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert prepare_count["n"] == 1  # the folded weight and bias, once (freezing)
        model.bn.running_var.mul_(2.0)  # an in-place statistics update: folded again, still right
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        assert prepare_count["n"] == 2
