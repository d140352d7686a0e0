"""Pooling as ``tsr`` ops: a window's max (or sum) is the elementwise max (or sum)
of strided slices of the padded input, one slice per window offset, which
``fuse-kernels`` makes one kernel that reads each window where it lies (the
way Inductor lowers pooling). The pool then fuses with its producer (a conv's
ReLU) and runs in whatever layout the passes choose, instead of an ATen call
between two kernels.

    %v, %i = aten.max_pool2d_with_indices(%x, [3, 3], [2, 2], [1, 1])   // %i unused (inference)
    // becomes
    %p  = tsr.pad %x, %ninf {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>}
    %h0 = tsr.slice %p {dim = 2 : i64, start = 0 : i64, end = 111 : i64, step = 2 : i64}
    %w0 = tsr.slice %h0 {dim = 3 : i64, start = 0 : i64, end = 111 : i64, step = 2 : i64}
    ...                                              // the 9 offsets (0..2, 0..2)
    %v  = tsr.maximum %m7, %w8
"""

from __future__ import annotations

import itertools
import math
from operator import getitem
from typing import TYPE_CHECKING

import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32, i1, i64
from xdsl.ir import SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.shapes import DYNAMIC, i64_array, with_elem

from .converters import SLICE_END, NotConvertible, converts, emit1, per_spatial_dim, slice_op
from .types import tensor_type

if TYPE_CHECKING:
    from .importer import FxImporter

aten = torch.ops.aten

MAX_WINDOW = 64
"""Windows of more elements stay ATen's call (one slice each would make a long kernel)."""


def window_slices(imp: FxImporter, node, x, kernel, stride, padding, dilation, fill: float | int,
                  ceil_mode: bool = False) -> list[SSAValue]:
    """``x`` padded with ``fill``, then one strided slice per offset of the window,
    each of the pool's output shape (``node``'s value, its first if a tuple).

    Along a symbolic size ``n`` the input is padded by ``padding`` on both sides and
    offset ``j``'s slice ends ``dilation * (k - 1) - j`` before the padded end, so its
    ``ceil((n + 2p - dilation * (k - 1)) / stride)`` elements are the floor-mode
    pool's at every ``n``: ``tsr.slice {start = j, end = j - 2, step = 2}`` for a
    3-wide window. A ceil-mode pool of stride > 1 drops its last window at some
    sizes only: over a symbolic size it is not converted."""
    val = node.meta["val"]
    out_shape = list((val[0] if isinstance(val, (tuple, list)) else val).shape)
    in_shape = list(node.args[0].meta["val"].shape)
    rank, nd = len(in_shape), len(kernel)
    spatial = range(rank - nd, rank)
    symbolic = [not isinstance(in_shape[d], int) or not isinstance(out_shape[d], int) for d in spatial]
    if any(sym and ceil_mode and stride[i] > 1 for i, sym in enumerate(symbolic)):
        raise NotConvertible("a ceil-mode pool over symbolic sizes")
    if not 1 < math.prod(kernel) <= MAX_WINDOW:
        raise NotConvertible(f"a window of {math.prod(kernel)} elements")
    source = imp.operand(x)
    elem, perm = source.type.get_element_type(), tsr.LayoutAttr(layout_of(source.type))
    low, high = [0] * rank, [0] * rank
    for i, d in enumerate(spatial):
        low[d] = padding[i]
        if symbolic[i]:
            high[d] = padding[i]
            continue
        reach = (out_shape[d] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1  # of the padded input
        high[d] = max(0, reach - in_shape[d] - padding[i])
    padded_shape = [n + lo + hi if isinstance(n, int) else DYNAMIC for n, lo, hi in zip(in_shape, low, high)]
    padded = source
    if any(low) or any(high):
        pad = tsr.PadOp.create(operands=[source, imp.scalar(fill)],
                               result_types=[TensorType(elem, padded_shape, perm)],
                               properties={"low": i64_array(low), "high": i64_array(high)})
        padded = emit1(imp, node, pad)
    slices = []
    for offsets in _offsets(kernel):
        value, shape = padded, list(padded_shape)
        for i, d in enumerate(spatial):
            start = offsets[i] * dilation[i]
            if symbolic[i]:
                shape[d], end = DYNAMIC, start - dilation[i] * (kernel[i] - 1)
                end = end if end < 0 else SLICE_END
            else:
                shape[d], end = out_shape[d], start + (out_shape[d] - 1) * stride[i] + 1
            value = slice_op(imp, node, value, d, start, end, stride[i], TensorType(elem, shape, perm))
        slices.append(value)
    return slices


def _offsets(kernel: list[int]) -> list[tuple[int, ...]]:
    offsets: list[tuple[int, ...]] = [()]
    for k in kernel:
        offsets = [o + (j,) for o in offsets for j in range(k)]
    return offsets


def _combine(imp: FxImporter, node, cls, values: list[SSAValue], result: TensorType) -> SSAValue:
    """``cls`` (``tsr.maximum``, ``tsr.add``) over ``values``, the last op typed ``result``."""
    acc = values[0]
    for i, v in enumerate(values[1:], start=2):
        t = result if i == len(values) else TensorType(result.get_element_type(), result.get_shape(),
                                                       tsr.LayoutAttr(layout_of(v.type)))
        acc = emit1(imp, node, cls.create(operands=[acc, v], result_types=[t]))
    return acc


@converts(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def _max_pool(imp, node, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """The max of the pool's window slices, the input padded with -inf (NaN stays
    NaN: ``tsr.maximum`` propagates it, as ATen's pool does); where backward reads
    the indices (training), the argmax beside it (:func:`_max_with_indices`). A
    pool over symbolic sizes, or of a large window, is ATen's call: ``max_pool2d``/
    ``3d`` for the values alone, which ``hoist-relayouts`` may move to
    channels-last, or the whole op where the indices are read."""
    indices = any(u.target is not getitem or u.args[1] != 0 for u in node.users)
    nd = 2 if node.target is aten.max_pool2d_with_indices.default else 3
    kernel = per_spatial_dim(kernel_size, nd)
    stride, padding = per_spatial_dim(stride, nd, kernel), per_spatial_dim(padding, nd)
    dilation = per_spatial_dim(dilation, nd)
    dtype = node.args[0].meta["val"].dtype
    fill = float("-inf") if dtype.is_floating_point else torch.iinfo(dtype).min
    try:
        if indices and not all(isinstance(n, int) for n in node.args[0].meta["val"].shape[-nd:]):
            raise NotConvertible("the indices of a pool over symbolic sizes")
        slices = window_slices(imp, node, x, kernel, stride, padding, dilation, fill, ceil_mode)
    except NotConvertible:
        if indices:
            raise
        pool = aten.max_pool2d.default if nd == 2 else aten.max_pool3d.default
        args = (x, kernel_size, stride, padding, dilation, ceil_mode)
        return [imp.aten_call(node, pool, args, {}, node.meta["val"][0]), None]
    if not indices:
        return [_combine(imp, node, tsr.MaximumOp, slices, tensor_type(node.meta["val"][0])), None]
    return _max_with_indices(imp, node, slices, kernel, stride, padding, dilation)


def _max_with_indices(imp: FxImporter, node, slices: list[SSAValue], kernel, stride, padding,
                      dilation) -> list[SSAValue]:
    """The max of ``slices`` and where it lies (an index into the input's spatial
    plane, ``(d * H + h) * W + w``), ATen's rule slice by slice in window order:
    a later element is taken when it is greater or NaN, so the last NaN wins;
    an all -inf window keeps its first element inside the input.

        %gt = tsr.cmp gt, %s1, %v0             // for each slice after the first:
        %v1 = tsr.where %gt, %s1, %v0
        %i1 = tsr.where %gt, %at1, %i0         // %at1 = %row1 + %col1: [Ho, 1] + [Wo]
        %nan = tsr.cmp ne, %s1, %s1
        ...                                    // the same two wheres on %nan
    """
    val = node.meta["val"]
    in_shape, out_shape = node.args[0].meta["val"].shape, val[0].shape
    nd = len(kernel)
    sizes, outs = list(in_shape[-nd:]), list(out_shape[-nd:])  # static (window_slices): ints
    plane = [math.prod(sizes[i + 1:]) for i in range(nd)]  # the input's spatial strides, row-major

    def along(i: int, coords: list[int]) -> SSAValue:
        """Spatial dim ``i``'s share of the flat index, shaped to broadcast along it."""
        shape = [outs[i]] + [1] * (nd - 1 - i)
        t = TensorType(i64, shape, tsr.LayoutAttr(tuple(range(len(shape)))))
        return imp.emit(tsr.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [c * plane[i] for c in coords]))).results[0]

    def flat(coords_per_dim: list[list[int]]) -> SSAValue:
        """The flat index of the input coordinates ``coords_per_dim[i][o]`` at each output position."""
        total = along(0, coords_per_dim[0])
        for i in range(1, nd):
            t = TensorType(i64, outs[:i + 1] + [1] * (nd - 1 - i), tsr.LayoutAttr(tuple(range(nd))))
            total = emit1(imp, node, tsr.AddOp.create(operands=[total, along(i, coords_per_dim[i])], result_types=[t]))
        return total

    def first_inside(i: int) -> list[int]:
        coords = []
        for o in range(outs[i]):
            c = o * stride[i] - padding[i]
            while c < 0:
                c += dilation[i]
            coords.append(c)
        return coords

    vtype, itype = tensor_type(val[0]), tensor_type(val[1])
    layout, shape = tsr.LayoutAttr(layout_of(slices[0].type)), slices[0].type.get_shape()  # a symbolic batch: ?
    btype, at_type = TensorType(i1, shape, layout), TensorType(i64, shape, layout)
    best, argmax = slices[0], flat([first_inside(i) for i in range(nd)])
    steps = list(zip(slices[1:], _offsets(kernel)[1:]))  # window_slices' order: row-major offsets
    for n, (value, offsets) in enumerate(steps, start=1):
        at = flat([[o * stride[i] - padding[i] + offsets[i] * dilation[i] for o in range(outs[i])]
                   for i in range(nd)])
        for predicate, rhs in (("gt", best), ("ne", value)):  # greater, then NaN (value != value)
            last = n == len(steps) and predicate == "ne"
            cond = emit1(imp, node, tsr.CmpOp(predicate, value, rhs, btype))
            best = emit1(imp, node, tsr.WhereOp.create(operands=[cond, value, best],
                                                       result_types=[vtype if last else value.type]))
            argmax = emit1(imp, node, tsr.WhereOp.create(operands=[cond, at, argmax],
                                                         result_types=[itype if last else at_type]))
    return [best, argmax]


def _divisor_counts(n: int, out: int, k: int, s: int, p: int, count_include_pad: bool) -> list[int]:
    """ATen's divisor of each output index along one dim (``AvgPoolKernel.cpp``): the window
    clipped to the padded input, or to the input itself without ``count_include_pad``."""
    counts = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, n + p)
        counts.append(end - start if count_include_pad else min(end, n) - max(start, 0))
    return counts


@converts(aten.avg_pool2d.default, aten.avg_pool3d.default)
def _avg_pool(imp, node, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    """An average pool: the sum of its window slices (the input padded with 0,
    summed in ATen's order) divided by ATen's divisor, a number, or per output
    position a constant where windows at the border count fewer elements. A
    bf16/f16 pool sums and divides in f32 and rounds its result, as ATen does.

        %v = aten.avg_pool2d(%x, [2, 2], [2, 2], [0, 0], True, False)   (x: 1x8x5x5)
        // becomes
        %s = tsr.add ... (the 4 window slices of %x padded by 1 at the end)
        %v = tsr.div %s, %n : (tensor<1x8x3x3xf32>, tensor<3x3xf32>)     // n: 4 2 / 4 2 / 2 1
    """
    val = node.meta["val"]
    if val.dtype not in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        raise NotConvertible(f"an average pool of {val.dtype}")
    nd = 2 if node.target is aten.avg_pool2d.default else 3
    kernel, padding = per_spatial_dim(kernel_size, nd), per_spatial_dim(padding, nd)
    stride = per_spatial_dim(stride, nd, kernel)
    in_shape, out_shape = node.args[0].meta["val"].shape[-nd:], val.shape[-nd:]
    static = all(isinstance(n, int) for n in (*in_shape, *out_shape))
    if not (static or divisor_override or ((count_include_pad or not any(padding)) and not ceil_mode)):
        raise NotConvertible("an average pool over symbolic sizes whose border windows count fewer elements")
    half = val.dtype in (torch.bfloat16, torch.float16)
    if half:
        source = imp.operand(x)
        x = imp.emit(tsr.ConvertOp.create(operands=[source], result_types=[with_elem(source.type, f32)])).results[0]
    slices = window_slices(imp, node, x, kernel, stride, padding, [1] * nd, 0.0, ceil_mode)
    total = _combine(imp, node, tsr.AddOp, slices, slices[0].type)
    result = tensor_type(val)

    def divide(divisor: SSAValue) -> SSAValue:
        if not half:
            return emit1(imp, node, tsr.DivOp.create(operands=[total, divisor], result_types=[result]))
        mean = imp.emit(tsr.DivOp.create(operands=[total, divisor], result_types=[with_elem(result, f32)])).results[0]
        return emit1(imp, node, tsr.ConvertOp.create(operands=[mean], result_types=[result]))

    if divisor_override:
        return divide(imp.scalar(float(divisor_override)))
    if not static:  # every window inside the padded input, or no padding: whole windows
        return divide(imp.scalar(float(math.prod(kernel))))
    per_dim = [_divisor_counts(n, o, k, s, p, count_include_pad)
               for n, o, k, s, p in zip(in_shape, out_shape, kernel, stride, padding)]
    counts = [math.prod(c) for c in itertools.product(*per_dim)]
    if len(set(counts)) == 1:
        divisor = imp.scalar(float(counts[0]))
    else:
        ctype = TensorType(total.type.get_element_type(), list(out_shape), tsr.LayoutAttr(tuple(range(nd))))
        divisor = imp.emit(tsr.ConstantOp(DenseIntOrFPElementsAttr.from_list(ctype, [float(c) for c in counts]))).results[0]
    return divide(divisor)
