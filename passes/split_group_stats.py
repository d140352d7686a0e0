"""``split-group-stats``: the mean and variance of channel groups (GroupNorm's
statistics) over a channels-last tensor, taken per channel over the pixels first
and then over each group's channels.

GroupNorm decomposes to a ``var``/``mean`` over dims 2 and 3 of the
``[N, G, C/G, H*W]`` reshape of its input. Over a channels-last input that
reshape is no view: one group's elements are ``C/G`` consecutive floats of
every pixel, so its reduction reads one float here and there (a division and
remainder per index) and every group's kernel point touches every cache line
of the tensor. Per channel, the reduction keeps the contiguous dim: each
kernel point sums a vector of neighbouring channels over the pixels, and the
tensor is read once per pass.

    %v = tsr.reshape %x : (tensor<1x128x64x64xf32, #tsr.layout<nhwc>>) -> tensor<1x32x4x4096xf32, #tsr.layout<nchw>>
    %m = tsr.mean %v {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
    %s = tsr.var %v {dims = array<i64: 2, 3>, keepdim = true, correction = 0.0 : f64} : (...) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
    // becomes
    %cm = tsr.mean %x {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x128x1x1xf32, #tsr.layout<nhwc>>
    %gc = tsr.reshape %cm : (...) -> tensor<1x32x4x1xf32, #tsr.layout<nchw>>
    %m  = tsr.mean %gc {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>
    %e  = tsr.expand %m : (...) -> tensor<1x32x4x1xf32, #tsr.layout<nchw>>
    %mc = tsr.reshape %e : (...) -> tensor<1x128x1x1xf32, #tsr.layout<nchw>>     // each channel's group mean
    %d  = tsr.sub %x, %mc : (...) -> tensor<1x128x64x64xf32, #tsr.layout<nhwc>>
    %q  = tsr.mul %d, %d : (...) -> tensor<1x128x64x64xf32, #tsr.layout<nhwc>>
    %cv = tsr.mean %q {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x128x1x1xf32, #tsr.layout<nhwc>>
    %s  = tsr.mean (tsr.reshape %cv) {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x32x1x1xf32, #tsr.layout<nchw>>

Every channel counts the same pixels, so the mean of the channel means is the
group's mean, and the variance stays two-pass (squared deviations from the
group's mean), as ``tsr.var`` computes it; the sums are only grouped
differently (per channel first). Applies to ``f32`` tensors (a narrower type
would round the per-channel partial results), population variance
(``correction = 0``, GroupNorm's), any batch and spatial sizes, static or
dynamic; a reshape with other users stays for them. Where the reshape reads a
relayout of the channels-last tensor to ``nchw`` (a dynamic ``H*W`` keeps the
relayout from fusing into it), the statistics read the channels-last tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, ModuleOp, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tessera.dialects import tsr
from tessera.dialects.tsr.dim_sources import dim_origin
from tessera.dialects.tsr.layout import LayoutAttr, identity, layout_of
from tessera.dialects.tsr.shapes import DYNAMIC, elem_of, i64_array, shape_of


def _group_reduction(op: Operation) -> bool:
    """A mean, or a population variance, over dims 2 and 3 of a rank-4 tensor."""
    if isinstance(op, tsr.VarOp) and op.correction.value.data != 0:
        return False
    return isinstance(op, (tsr.MeanOp, tsr.VarOp)) and set(op.reduced_dims()) == {2, 3}


def _channels_last(v: SSAValue) -> SSAValue | None:
    """``v`` when its channels are contiguous, or the channels-last tensor it is a relayout of
    (where the relayout could not fuse into the reshape: a dynamic ``H*W``)."""
    if layout_of(v.type)[-1] == 1:
        return v
    if isinstance(v.owner, tsr.RelayoutOp) and layout_of(v.owner.input.type)[-1] == 1:
        return v.owner.input
    return None


def _grouped(r: tsr.ReshapeOp) -> tuple[SSAValue, int] | None:
    """The channels-last tensor and the number of groups when ``r`` reshapes an f32
    ``[N, C, *spatial]`` tensor of more than one pixel (the per-channel results are
    one) to ``[N, G, C/G, prod(spatial)]`` (the same ``N``: equal sizes, or one
    ``tsr.dim`` origin), else None."""
    xs, rs = shape_of(r.input.type), shape_of(r.result.type)
    x = _channels_last(r.input)
    if (x is None or len(xs) < 3 or len(rs) != 4 or elem_of(x.type) != f32
            or DYNAMIC in (xs[1], rs[1], rs[2]) or rs[1] * rs[2] != xs[1] or math.prod(xs[2:]) == 1):
        return None
    if xs[0] != DYNAMIC:
        return (x, rs[1]) if rs[0] == xs[0] else None
    if rs[0] != DYNAMIC or not isinstance(n := r.sizes[0].owner, tsr.DimOp):
        return None
    return (x, rs[1]) if dim_origin(n.input, n.dim.value.data) == dim_origin(x, 0) else None


def _typed(shape: list[int], like: TensorType) -> TensorType:
    return TensorType(elem_of(like), shape, LayoutAttr(identity(len(shape))))


@dataclass
class _Builder:
    """The new ops, in order, in front of the reshape."""

    x: SSAValue
    groups: int
    ops: list[Operation]

    def emit(self, op: Operation, name: str | None = None) -> SSAValue:
        self.ops.append(op)
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def sizes(self) -> list[SSAValue]:
        """The ``tsr.dim`` of a dynamic batch, for the reshapes that keep it."""
        if shape_of(self.x.type)[0] != DYNAMIC:
            return []
        if not any(isinstance(o, tsr.DimOp) for o in self.ops):
            self.emit(tsr.DimOp(self.x, 0))
        return [next(o.result for o in self.ops if isinstance(o, tsr.DimOp))]

    def mean(self, v: SSAValue, dims: list[int], shape: list[int], like: TensorType, name: str) -> SSAValue:
        return self.emit(tsr.MeanOp.create(operands=[v], result_types=[TensorType(elem_of(like), shape, like.encoding)],
                                           properties={"dims": i64_array(dims), "keepdim": BoolAttr(True, 1)}), name)

    def reshape(self, v: SSAValue, shape: list[int], name: str) -> SSAValue:
        return self.emit(tsr.ReshapeOp.create(operands=[v, *self.sizes()], result_types=[_typed(shape, v.type)]), name)

    def group_mean(self, v: SSAValue, name: str) -> SSAValue:
        """``v``'s mean per channel over the pixels, then over each group's channels:
        ``[N, G, 1, 1]``."""
        xs = shape_of(v.type)
        spatial = list(range(2, len(xs)))
        per_channel = self.mean(v, spatial, [*xs[:2], *(1 for _ in spatial)], v.type, f"{name}_c")
        grouped = self.reshape(per_channel, [xs[0], self.groups, xs[1] // self.groups, 1], f"{name}_gc")
        return self.mean(grouped, [2, 3], [xs[0], self.groups, 1, 1], grouped.type, name)

    def deviations(self, mean: SSAValue) -> SSAValue:
        """``(x - mean of x's group) ** 2``, shaped as ``x``."""
        xs = shape_of(self.x.type)
        n, c = xs[:2]
        wide = self.emit(tsr.ExpandOp.create(operands=[mean], result_types=[_typed([n, self.groups, c // self.groups, 1],
                                                                                   mean.type)]))
        per_channel = self.reshape(wide, [n, c, *(1 for _ in xs[2:])], "group_mean_c")
        d = self.emit(tsr.SubOp.create(operands=[self.x, per_channel], result_types=[self.x.type]))
        return self.emit(tsr.MulOp.create(operands=[d, d], result_types=[self.x.type]), "sq_dev")


class SplitGroupStatsPattern(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, r: tsr.ReshapeOp, rewriter: PatternRewriter) -> None:
        grouped = _grouped(r)
        users = [u.operation for u in r.result.uses if _group_reduction(u.operation)] if grouped else []
        if not users:
            return
        b = _Builder(*grouped, [])
        mean = b.group_mean(b.x, "group_mean")
        var = None
        if any(isinstance(u, tsr.VarOp) for u in users):
            var = b.group_mean(b.deviations(mean), "group_var")
        results: dict[Operation, SSAValue] = {}
        for u in dict.fromkeys(users):
            v = var if isinstance(u, tsr.VarOp) else mean
            if v.type != u.result.type:  # without keepdim, or in another layout
                v = b.emit(tsr.ReshapeOp.create(operands=[v, *b.sizes()], result_types=[u.result.type]))
            results[u] = v
        rewriter.insert(b.ops, InsertPoint.before(r))
        for u, v in results.items():
            rewriter.replace(u, [], [v])


@dataclass(frozen=True)
class SplitGroupStats(ModulePass):
    name = "split-group-stats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitGroupStatsPattern(), apply_recursively=False).rewrite_module(op)
