"""``fuse-conv-residuals``: a residual added to a convolution's result
becomes the conv's ``residual`` operand, added by the library (a oneDNN
binary post-op) or tessera's conv kernel before the result is stored (and
before the activation ``fuse-conv-epilogues`` may put there next):

    %y = tsr.conv %x, %w, %b {...} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %s = tsr.add %y, %r : (tensor<1x64x56x56xf32, #tsr.layout<nhwc>>, tensor<1x64x56x56xf32, #tsr.layout<nhwc>>) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    // becomes
    %s = tsr.conv %x, %w, %b, %r {..., residual} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>

In the fusion pipeline of a target with its own conv kernel (x86), and there only
where that kernel computes the conv (the target's ``own_conv_kernel`` model), whose
epilogue adds the residual in registers as it stores. oneDNN's binary
post-op was measured 1-3% slower end to end than leaving the add to the
kernel after the conv (ResNet block, 1x64x56x56, 2 threads, five runs of
``bench/models.py --without fuse-conv-residuals`` in random order;
``BENCHMARKS.md``), so convs oneDNN computes keep the add outside;
``all_convs=true`` fuses into every conv. GPU convs (cuDNN through ATen) would
add it in an ATen kernel of its own: their pipelines leave the pass out.

Where tessera's kernel would compute the conv writing the add's layout
(the target's contiguous-output rules), the conv writes it
and reads the residual as it is: ``add(conv_nhwc, x_nchw) -> nchw`` becomes
one conv with an NCHW result and residual, and no relayout at all.

Runs in the fusion step, after the layout passes. The residual must already
be there in the conv's layout: the add's other operand itself, or a relayout
of it the graph computes anyway (a ResNet block's input, relayouted for its
first conv). An add whose result has another layout leaves a relayout of the
fused conv behind:

    %s = tsr.add %y, %x : (...nhwc>>, ...nchw>>) -> tensor<1x64x56x56xf32, #tsr.layout<nchw>>
    // with %xr = tsr.relayout %x : (...nchw>>) -> (...nhwc>>) earlier in the graph, becomes
    %c = tsr.conv %x1, %w, %b, %xr {..., residual} : (...) -> tensor<1x64x56x56xf32, #tsr.layout<nhwc>>
    %s = tsr.relayout %c : (...nhwc>>) -> tensor<1x64x56x56xf32, #tsr.layout<nchw>>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from tessera.dialects import tsr

from .fuse_conv_epilogues import replace_by_conv
from .target_models import KernelQuery
from .target_pass import TargetPass, own_kernel_conv


def _bare_conv(v: SSAValue) -> tsr.ConvOp | None:
    """The conv computing ``v`` when ``v`` is its only use and it has no epilogue yet."""
    conv = v.owner
    if isinstance(conv, tsr.ConvOp) and conv.activation is None and conv.residual is None and conv.result.has_one_use():
        return conv
    return None


def _in_layout(v: SSAValue, t: Attribute, before: Operation) -> SSAValue | None:
    """``v`` with type ``t``: itself, or a relayout of it computed before ``before`` in its block."""
    if v.type == t:
        return v
    for use in v.uses:
        r = use.operation
        if (isinstance(r, tsr.RelayoutOp) and r.result.type == t and r.parent_block() is before.parent_block()
                and r.is_before_in_block(before)):
            return r.result
    return None


def _writes_in_add_layout(rewriter: PatternRewriter, add: tsr.AddOp, conv: tsr.ConvOp, r: SSAValue,
                          query: KernelQuery) -> bool:
    """Fuses ``add(conv, r)`` into a conv that writes the add's layout (not the conv's),
    reading ``r`` as it is, where tessera's kernel computes that conv: a ResNet
    shortcut ``add(conv_nhwc, x_nchw) -> nchw`` becomes one kernel, no relayout."""
    t = add.result.type
    if r.type != t or t == conv.result.type or t.get_shape() != conv.result.type.get_shape():
        return False
    fused = own_kernel_conv(query, conv.input, conv.weight, conv.bias, r, t, conv.properties, replacing=conv)
    if fused is None:
        return False
    replace_by_conv(rewriter, add, fused, [conv])
    return True


@dataclass
class FuseConvResidual(RewritePattern):
    query: KernelQuery
    all_convs: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tsr.AddOp, rewriter: PatternRewriter) -> None:
        lhs, rhs = op.operands
        for y, r in ((lhs, rhs), (rhs, lhs)):
            conv = _bare_conv(y) if y is not r else None
            if conv is None or not isinstance(r.type, TensorType):
                continue
            if _writes_in_add_layout(rewriter, op, conv, r, self.query):
                return
            if not (self.all_convs or self.query.own_conv(conv) is not None):
                continue
            t = conv.result.type
            if (r.type.get_shape() != t.get_shape() or r.type.get_element_type() != t.get_element_type()
                    or op.result.type.get_shape() != t.get_shape()
                    or op.result.type.get_element_type() != t.get_element_type()):
                continue
            residual = _in_layout(r, t, op)
            if residual is None:
                continue
            fused = tsr.ConvOp.with_epilogue(conv.input, conv.weight, conv.bias, residual, t, conv.properties)
            replace_by_conv(rewriter, op, fused, [conv])
            return


@dataclass(frozen=True)
class FuseConvResiduals(TargetPass):
    name = "fuse-conv-residuals"
    all_convs: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseConvResidual(self.query, self.all_convs)).rewrite_module(op)
