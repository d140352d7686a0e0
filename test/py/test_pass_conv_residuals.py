"""``fuse-conv-residuals`` and ``tsr.conv``'s residual operand: the add of a
residual becomes the conv's epilogue (interpreted before and after the pass)
in the x86 fusion pipeline where tessera's conv kernel computes the conv (or
every conv with ``all_convs``); the oneDNN call adds it as a binary post-op."""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.errors import VerificationError
from tessera.compiler.library_calls import OneDnnConv
from tessera.dialects import tsr

from pass_testing import apply_pass, check_pass, parse, tensor_type as T

X, W, Y = (1, 8, 6, 6), (8, 8, 3, 3), (1, 8, 6, 6)
ATTRS = "{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}"


def ops(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def block(elem: str = "f32", residual_layout: str = "nhwc", act: str = "relu") -> str:
    """A ResNet-style block in NHWC: ``act(conv(x) + x)``, ``x`` given in
    ``residual_layout`` (and relayouted to NHWC for the conv when it is not)."""
    x, w, y = T(X, elem, "nhwc"), T(W, elem, "nhwc"), T(Y, elem, "nhwc")
    xr = T(X, elem, residual_layout)
    relayout = f"  %xn = tsr.relayout %x : ({xr}) -> {x}\n" if residual_layout != "nhwc" else ""
    return f"""
func.func @forward(%x: {xr}, %w: {w}, %b: {T([8], elem)}) -> {xr} {{
{relayout}  %y = tsr.conv {"%xn" if relayout else "%x"}, %w, %b {ATTRS} : ({x}, {w}, {T([8], elem)}) -> {y}
  %s = tsr.add %y, %x : ({y}, {xr}) -> {xr}
  %a = tsr.{act} %s : ({xr}) -> {xr}
  func.return %a : {xr}
}}"""


def test_residual_in_the_convs_layout_becomes_its_epilogue():
    after = check_pass(parse(block()), "fuse-conv-residuals{target=x86 all_convs=true},fuse-conv-epilogues")
    (conv,) = ops(after, tsr.ConvOp)
    assert conv.residual_input is not None and conv.residual_input is conv.parent_block().args[0]
    assert conv.activation_name() == "relu" and not ops(after, tsr.AddOp) and not ops(after, tsr.ReluOp)


@pytest.mark.parametrize("elem", ["f32", "bf16"])
def test_residual_through_the_relayout_the_graph_has(elem):
    """ResNet's shortcut: x arrives NCHW and is relayouted for the first conv; the
    add reads that relayout, and the result goes back NCHW through a relayout."""
    after = check_pass(parse(block(elem, residual_layout="nchw")), "fuse-conv-residuals{target=x86 all_convs=true},fuse-conv-epilogues")
    (conv,) = ops(after, tsr.ConvOp)
    assert isinstance(conv.residual_input.owner, tsr.RelayoutOp)
    assert conv.activation_name() == "relu"
    (back,) = [r for r in ops(after, tsr.RelayoutOp) if r.input is conv.result]
    assert back.result.type == conv.parent_block().args[0].type


def test_no_fusion_without_the_residual_in_the_convs_layout():
    """No relayout of the NCHW residual to NHWC in the graph: making one would
    cost a copy more than the add kernel that reads it as it is."""
    x, w, y, r = T(X, "f32", "nhwc"), T(W, "f32", "nhwc"), T(Y, "f32", "nhwc"), T(Y)
    text = f"""
func.func @forward(%x: {x}, %w: {w}, %r: {r}) -> {r} {{
  %y = tsr.conv %x, %w {ATTRS} : ({x}, {w}) -> {y}
  %s = tsr.add %y, %r : ({y}, {r}) -> {r}
  func.return %s : {r}
}}"""
    after = check_pass(parse(text), "fuse-conv-residuals{target=x86 all_convs=true}")
    assert ops(after, tsr.AddOp) and ops(after, tsr.ConvOp)[0].residual is None


def test_broadcast_or_activated_conv_is_not_fused():
    y, b = T(Y, "f32", "nhwc"), T([1, 8, 1, 1])
    text = f"""
func.func @forward(%x: {T(X, "f32", "nhwc")}, %w: {T(W, "f32", "nhwc")}, %c: {b}) -> {y} {{
  %y = tsr.conv %x, %w {ATTRS} : ({T(X, "f32", "nhwc")}, {T(W, "f32", "nhwc")}) -> {y}
  %s = tsr.add %y, %c : ({y}, {b}) -> {y}
  func.return %s : {y}
}}"""
    assert not ops(check_pass(parse(text), "fuse-conv-residuals{target=x86 all_convs=true}"), tsr.ConvOp)[0].residual
    activated = block().replace("%s = tsr.add %y, %x", "%yr = tsr.relu %y : ({y}) -> {y}\n  %s = tsr.add %yr, %x".format(
        y=T(Y, "f32", "nhwc")))
    after = check_pass(parse(activated), "fuse-conv-epilogues,fuse-conv-residuals{target=x86 all_convs=true}")
    assert ops(after, tsr.AddOp), "add(relu(conv), x) is not relu(conv + x)"


def test_x86_fuses_residuals_where_tesseras_kernel_computes_the_conv(monkeypatch):
    """tessera's kernel adds the residual as it stores; oneDNN's binary post-op
    measured slower than the add in the next kernel; GPU convs go through ATen."""
    import tessera.compiler.targets.x86.conv_choice as host
    from tessera.compiler.stages import fuse_kernels

    monkeypatch.setattr(host, "prefers_tessera", lambda target, conv, *layouts: False)  # oneDNN computes it
    assert ops(fuse_kernels(parse(block()), "x86"), tsr.ConvOp)[0].residual is None
    if host.host_isa() is not None:
        monkeypatch.setattr(host, "prefers_tessera", lambda target, conv, *layouts: target == "x86")
        assert ops(fuse_kernels(parse(block()), "x86"), tsr.ConvOp)[0].residual is not None
    for target in ("ptx", "metal"):
        assert ops(fuse_kernels(parse(block()), target), tsr.ConvOp)[0].residual is None


def test_verifier_rejects_a_residual_of_another_type():
    x, w, y = T(X, "f32", "nhwc"), T(W, "f32", "nhwc"), T(Y, "f32", "nhwc")
    bad = f"""
func.func @forward(%x: {x}, %w: {w}, %r: {T(Y)}) -> {y} {{
  %y = tsr.conv %x, %w, %r {{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, residual}} : ({x}, {w}, {T(Y)}) -> {y}
  func.return %y : {y}
}}"""
    with pytest.raises(VerificationError, match="residual must have the result's type"):
        parse(bad)


@pytest.mark.parametrize("act", [None, "relu", "silu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_onednn_adds_the_residual(act, dtype):
    text = block(act="relu").replace("tsr.relu", f"tsr.{act or 'relu'}")
    after = apply_pass(parse(text), "fuse-conv-residuals{target=x86 all_convs=true}" + (",fuse-conv-epilogues" if act else ""))
    (conv,) = ops(after, tsr.ConvOp)
    call = OneDnnConv(conv)
    g = torch.Generator().manual_seed(0)
    cl = torch.channels_last
    x = torch.randn(X, generator=g).to(dtype).contiguous(memory_format=cl)
    w = torch.randn(W, generator=g).to(dtype)
    b = torch.randn(8, generator=g).to(dtype)
    expected = torch.nn.functional.conv2d(x.float(), w.float(), b.float(), padding=1) + x.float()
    expected = {None: lambda t: t, "relu": torch.relu, "silu": torch.nn.functional.silu}[act](expected)
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    with torch.no_grad():
        for r in (x, x.contiguous()):  # channels-last residual: the post-op; another layout: added after
            got = call(x, w, b, r)
            torch.testing.assert_close(got.float(), expected, rtol=tol, atol=tol * float(expected.abs().max()))
