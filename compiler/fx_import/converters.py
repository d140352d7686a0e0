"""One converter per ATen overload that has a ``tsr`` op.

A converter gets the importer, the FX node and the node's arguments, emits
ops and returns the node's value. It raises :class:`NotConvertible` when an
argument is outside what the op expresses (a transposed conv, ``alpha != 1``);
the importer then keeps the node as a ``tsr.aten_call``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import getitem
from typing import TYPE_CHECKING, Any

import torch
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.ops_elementwise import INT_OK_UNARY
from tessera.dialects.tsr.shapes import DYNAMIC, i64_array, is_static, shape_of, with_elem

if TYPE_CHECKING:
    from .importer import FxImporter

from .types import size_hint, tensor_type

aten = torch.ops.aten
prims = torch.ops.prims


class NotConvertible(Exception):
    """This call has no ``tsr`` form; keep it as an ATen call."""


CONVERTERS: dict[Any, Callable[..., Any]] = {}


def converts(*targets: Any):
    def deco(fn):
        for t in targets:
            CONVERTERS[t] = fn
        return fn

    return deco


def rtype(node) -> TensorType:
    return tensor_type(node.meta["val"])


def emit1(imp: FxImporter, node, op: Operation) -> SSAValue:
    return imp.emit(op, node.name).results[0]


def per_spatial_dim(value, nd: int, default=None) -> list[int]:
    """ATen's int-or-list window argument (a conv's or pool's stride, padding...), one
    entry per spatial dim; an empty list or None is ``default`` (a pool's stride: its kernel)."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        value = default
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return values * nd if len(values) == 1 else values


def _norm_dims(dims, rank: int) -> list[int]:
    """ATen's dims, normalized; a 0-d tensor's dim 0 (or -1) is no dim (``[]``:
    a reduction over all of its no dims)."""
    if dims is None or rank == 0:
        return []
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [d % max(rank, 1) for d in dims]


# -- elementwise ---------------------------------------------------------------------
_UNARY = {
    aten.neg.default: tsr.NegOp,
    aten.exp.default: tsr.ExpOp,
    aten.log.default: tsr.LogOp,
    aten.sqrt.default: tsr.SqrtOp,
    aten.rsqrt.default: tsr.RsqrtOp,
    aten.sigmoid.default: tsr.SigmoidOp,
    aten.silu.default: tsr.SiluOp,
    aten.relu.default: tsr.ReluOp,
    aten.tanh.default: tsr.TanhOp,
    aten.abs.default: tsr.AbsOp,
    aten.erf.default: tsr.ErfOp,
    aten.reciprocal.default: tsr.ReciprocalOp,
    aten.log1p.default: tsr.Log1pOp,
    aten.expm1.default: tsr.Expm1Op,
    aten.floor.default: tsr.FloorOp,
    aten.ceil.default: tsr.CeilOp,
    aten.trunc.default: tsr.TruncOp,
    aten.round.default: tsr.RoundOp,
}


def _unary_converter(cls):
    def convert(imp, node, x):
        if cls.name not in INT_OK_UNARY and not x.meta["val"].is_floating_point():  # floor of an int: a copy
            raise NotConvertible(f"{cls.name} of a {x.meta['val'].dtype} tensor")
        return emit1(imp, node, cls.create(operands=[imp.operand(x)], result_types=[rtype(node)]))

    return convert


for _target, _cls in _UNARY.items():
    CONVERTERS[_target] = _unary_converter(_cls)


@converts(aten.gelu.default)
def _gelu(imp, node, x, approximate="none"):
    props = {"approximate": StringAttr(approximate)} if approximate != "none" else {}
    return emit1(imp, node, tsr.GeluOp.create(operands=[imp.operand(x)], result_types=[rtype(node)], properties=props))


def _binary(imp, node, cls, a, b) -> SSAValue:
    return emit1(imp, node, cls.create(operands=[_elementwise_operand(imp, node, v) for v in (a, b)],
                                       result_types=[rtype(node)]))


def _elementwise_operand(imp, node, v) -> SSAValue:
    """``v`` as an operand of a floating elementwise op: a size of the graph (``i64``: a
    mean's backward ``expand(dy) / (h * w)`` at symbolic sizes) as a 0-d ``f64`` tensor,
    which a fused kernel reads (a host value would keep the op on the host):

        %n = arith.muli %h, %w : i64
        %f = tsr.aten_call "aten.scalar_tensor.default"(%n) {...} : (i64) -> tensor<f64>
        %q = tsr.div %e, %f : (tensor<?x16x?x?xf32>, tensor<f64>) -> tensor<?x16x?x?xf32>"""
    value = imp.operand(v)
    if value.type == i64 and isinstance(v, torch.fx.Node) and node.meta["val"].is_floating_point():
        return imp.float_value(v)
    return value


_BINARY = {
    (aten.mul.Tensor, aten.mul.Scalar): tsr.MulOp,
    (aten.div.Tensor, aten.div.Scalar, aten.true_divide.Tensor): tsr.DivOp,
    (aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar, aten.pow.Scalar): tsr.PowOp,
    (aten.maximum.default,): tsr.MaximumOp,
    (aten.minimum.default,): tsr.MinimumOp,
}
for _targets, _cls in _BINARY.items():
    for _t in _targets:
        CONVERTERS[_t] = lambda imp, node, a, b, _cls=_cls: _binary(imp, node, _cls, a, b)


def _scaled(imp, node, b, alpha):
    if alpha == 1:
        return b
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return b * alpha
    raise NotConvertible("alpha != 1")


@converts(aten.add.Tensor, aten.add.Scalar)
def _add(imp, node, a, b, alpha=1):
    return _binary(imp, node, tsr.AddOp, a, _scaled(imp, node, b, alpha))


@converts(aten.sub.Tensor, aten.sub.Scalar)
def _sub(imp, node, a, b, alpha=1):
    return _binary(imp, node, tsr.SubOp, a, _scaled(imp, node, b, alpha))


@converts(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(imp, node, a, b, alpha=1):
    if alpha != 1:
        raise NotConvertible("alpha != 1")
    return _binary(imp, node, tsr.SubOp, b, a)


_CMP = {"eq": aten.eq, "ne": aten.ne, "lt": aten.lt, "le": aten.le, "gt": aten.gt, "ge": aten.ge}
for _pred, _packet in _CMP.items():
    for _t in (_packet.Tensor, _packet.Scalar):
        CONVERTERS[_t] = lambda imp, node, a, b, _p=_pred: emit1(
            imp, node, tsr.CmpOp(_p, imp.operand(a), imp.operand(b), rtype(node))
        )


@converts(aten.isnan.default)
def _isnan(imp, node, x):
    """``isnan(x)`` of a float tensor as ``x != x`` (only NaN is unordered with itself):

        %m = tsr.cmp ne, %x, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    """
    if not x.meta["val"].is_floating_point():
        raise NotConvertible(f"isnan of a {x.meta['val'].dtype} tensor")
    v = imp.operand(x)
    return emit1(imp, node, tsr.CmpOp("ne", v, v, rtype(node)))


@converts(aten.logical_not.default)
def _logical_not(imp, node, x):
    """``logical_not(x)`` as ``x == 0`` (NaN is true, so its negation false, as in ATen):

        %z = tsr.constant 0 : i64
        %m = tsr.cmp eq, %x, %z : (tensor<8xf32>, i64) -> tensor<8xi1>
    """
    if node.meta["val"].dtype != torch.bool:
        raise NotConvertible("logical_not into a non-boolean tensor")
    return emit1(imp, node, tsr.CmpOp("eq", imp.operand(x), imp.scalar(0), rtype(node)))


@converts(aten.where.self)
def _where(imp, node, c, a, b):
    ops = [imp.operand(v) for v in (c, a, b)]
    return emit1(imp, node, tsr.WhereOp.create(operands=ops, result_types=[rtype(node)]))


@converts(aten.bitwise_or.Tensor, aten.logical_or.default, aten.bitwise_and.Tensor, aten.logical_and.default)
def _bool_or_and(imp, node, a, b):
    """``a | b`` and ``a & b`` of two boolean tensors as selects, which every target
    lowers (ReLU6's backward: ``(x <= 0) | (x >= 6)``); ``logical_or``/``and`` of other
    tensors on their truth (``x != 0``):

        %o = tsr.where %a, %a, %b : (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>   // a | b
        %n = tsr.where %a, %b, %a : (...) -> tensor<8xi1>                                          // a & b
    """
    logical = node.target in (aten.logical_or.default, aten.logical_and.default)
    if not all(isinstance(v, torch.fx.Node) and (logical or v.meta["val"].dtype == torch.bool) for v in (a, b)):
        raise NotConvertible("bitwise or/and of tensors that are not both boolean")
    x, y = (_truth(imp, node, v) for v in (a, b))
    ors = node.target in (aten.bitwise_or.Tensor, aten.logical_or.default)
    ops = [x, x, y] if ors else [x, y, x]
    return emit1(imp, node, tsr.WhereOp.create(operands=ops, result_types=[rtype(node)]))


@converts(aten.sign.default, aten.sgn.default)
def _sign(imp, node, x):
    """``sign(x)`` of a real tensor as two selects: 1 where ``x > 0``, -1 where ``x < 0``,
    else +0 (NaN and -0.0 too, as in ATen):

        %g = tsr.cmp gt, %x, %zero ...
        %l = tsr.cmp lt, %x, %zero ...
        %s = tsr.where %g, %one, (tsr.where %l, %minus_one, %zero)
    """
    dtype = x.meta["val"].dtype
    if dtype == torch.bool or dtype.is_complex:
        raise NotConvertible(f"sign of a {dtype} tensor")
    v, t = imp.operand(x), rtype(node)
    one = 1.0 if dtype.is_floating_point else 1
    mask = with_elem(t, i1)
    pos, neg = (emit1(imp, node, tsr.CmpOp(p, v, imp.scalar(0), mask)) for p in ("gt", "lt"))
    rest = emit1(imp, node, tsr.WhereOp.create(operands=[neg, imp.scalar(-one), imp.scalar(0 * one)], result_types=[t]))
    return emit1(imp, node, tsr.WhereOp.create(operands=[pos, imp.scalar(one), rest], result_types=[t]))


@converts(aten.logical_xor.default)
def _logical_xor(imp, node, a, b):
    """``logical_xor(a, b)`` as ``(a != 0) != (b != 0)``."""
    if not all(isinstance(v, torch.fx.Node) for v in (a, b)):
        raise NotConvertible("logical_xor of a number")
    return emit1(imp, node, tsr.CmpOp("ne", _truth(imp, node, a), _truth(imp, node, b), rtype(node)))


def _truth(imp, node, v) -> SSAValue:
    """Tensor ``v`` as booleans: itself, or ``v != 0`` (NaN is true)."""
    value = imp.operand(v)
    if v.meta["val"].dtype == torch.bool:
        return value
    return emit1(imp, node, tsr.CmpOp("ne", value, imp.scalar(0), with_elem(value.type, i1)))


@converts(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default, aten.clamp.Tensor,
          aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def _clamp(imp, node, x, lo=None, hi=None):
    if node.target in (aten.clamp_max.default, aten.clamp_max.Tensor):
        lo, hi = None, lo
    if lo is None and hi is None:
        raise NotConvertible("clamp without bounds")
    v = imp.operand(x)
    t = rtype(node)
    if lo is not None:
        v = imp.emit(tsr.MaximumOp.create(operands=[v, imp.operand(lo)], result_types=[t]), node.name).results[0]
    if hi is not None:
        v = imp.emit(tsr.MinimumOp.create(operands=[v, imp.operand(hi)], result_types=[t]), node.name).results[0]
    return v


# -- dtype, layout and identity ------------------------------------------------------
def _retyped(imp, node, x) -> SSAValue:
    """``x`` converted to the node's dtype and layout: convert and/or relayout."""
    v = imp.operand(x)
    t = rtype(node)
    if v.type.get_element_type() != t.get_element_type():
        mid = TensorType(t.get_element_type(), t.get_shape(), tsr.LayoutAttr(layout_of(v.type)))
        v = emit1(imp, node, tsr.ConvertOp.create(operands=[v], result_types=[mid]))
    if layout_of(v.type) != layout_of(t):
        v = emit1(imp, node, tsr.RelayoutOp.create(operands=[v], result_types=[t]))
    return v


@converts(aten._to_copy.default)
def _to_copy(imp, node, x, **kw):
    if kw.get("device") is not None and kw["device"] != node.args[0].meta["val"].device:
        raise NotConvertible("device transfer")
    return _retyped(imp, node, x)


@converts(
    prims.convert_element_type.default,
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
)
def _copy(imp, node, x, *_, **__):
    """Copies and aliases: the value itself, converted/relayouted where the node's type differs."""
    return _retyped(imp, node, x)


# -- shapes --------------------------------------------------------------------------
@converts(
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.unsqueeze.default,
    aten.flatten.using_ints,
)
def _reshape(imp, node, x, *_):
    src, out = node.args[0].meta["val"].shape, node.meta["val"].shape
    return reshape_to(imp, node, imp.operand(x), rtype(node), src, out, _size_list(node))


def _size_list(node) -> list | None:
    """The target sizes an ATen reshape names (ints and size nodes), or None (squeeze & co.)."""
    if node.target in (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.as_strided.default):
        return list(node.args[1])
    return None


def reshape_to(imp, node, x: SSAValue, t: TensorType, src, out, sizes: list | None = None) -> SSAValue:
    """``tsr.reshape`` of ``x`` (traced sizes ``src``) to ``t`` (traced sizes
    ``out``). A dynamic dim of ``t`` gets its size from ``sizes`` (the graph's
    size nodes, or ``-1``) where the op names them, else as the product of the
    run of input dims the shape environment proves equal to it (``tsr.dim``):

        %n = tsr.dim %x {dim = 0 : i64} : (tensor<?x16x1x1xf32>) -> i64
        %r = tsr.reshape %x, %n : (tensor<?x16x1x1xf32>, i64) -> tensor<?x16xf32>
    """
    operands = []
    same = _same_size_dims(src, out)
    for d, n in enumerate(t.get_shape()):
        if n != DYNAMIC:
            continue
        if d in same:  # the size of one input dim: a kernel can index through it (dim_sources.reshape_anchors)
            operands.append(imp.emit(tsr.DimOp(x, same[d])).results[0])
            continue
        if sizes is not None:
            v = sizes[d]
            operands.append(imp.size_value(v))
            continue
        size = None
        for k in _source_run(src, out[d]):
            dim = imp.emit(tsr.DimOp(x, k)).results[0]
            size = dim if size is None else imp.emit(arith.MuliOp(size, dim)).results[0]
        operands.append(size)
    return emit1(imp, node, tsr.ReshapeOp.create(operands=[x, *operands], result_types=[t]))


def _same_size_dims(src, out) -> dict[int, int]:
    """Each symbolic dim of ``out``, in order, to the first symbolic dim of ``src``
    after the last one taken that is proven the same size (no guard added):
    ``{1: 3, 2: 4}`` for ``(1, 1, 32, s0, s0) -> (32, s0, s0)``."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    found: dict[int, int] = {}
    start = 0
    for d, n in enumerate(out):
        if isinstance(n, int):
            continue
        k = next((k for k in range(start, len(src)) if not isinstance(src[k], int) and known(src[k] == n)), None)
        if k is not None:
            found[d], start = k, k + 1
    return found


def _source_run(src, size) -> list[int]:
    """The dims of a run of ``src`` whose sizes multiply to the symbolic ``size``,
    proven without adding guards (size-1 dims left out): ``[2, 3]`` for
    ``s1*s2`` of ``(s0, 16, s1, s2)``."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    for i in range(len(src)):
        prod, run = 1, []
        for j in range(i, len(src)):
            prod *= src[j]
            if not (isinstance(src[j], int) and src[j] == 1):
                run.append(j)
            if known(prod == size):
                return run
    raise NotConvertible(f"a reshape to the symbolic size {size} that is no product of a run of its input's")


@converts(aten.sym_size.int)
def _sym_size(imp, node, x, dim):
    rank = len(node.args[0].meta["val"].shape)
    return imp.emit(tsr.DimOp(imp.operand(x), dim % rank), node.name).results[0]


@converts(aten.sym_numel.default)
def _sym_numel(imp, node, x):
    """A tensor's element count: its static sizes' product times each dynamic one
    (``arith.muli`` of ``tsr.dim``s)."""
    shape = tensor_type(node.args[0].meta["val"]).get_shape()
    total = imp.size_value(math.prod(n for n in shape if n != DYNAMIC))
    for d, n in enumerate(shape):
        if n == DYNAMIC:
            size = imp.emit(tsr.DimOp(imp.operand(x), d)).results[0]
            total = imp.emit(arith.MuliOp(total, size), node.name).results[0]
    return total


@converts(aten.as_strided.default)
def _as_strided(imp, node, x, size, stride, offset=None):
    """An ``as_strided`` that only re-views a dense row-major tensor is a reshape
    (sizes may be symbolic: read from the traced values, compared without guards)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    src, out = node.args[0].meta["val"], node.meta["val"]
    if offset or not known(src.is_contiguous()) or not known(out.is_contiguous()) or not known(out.numel() == src.numel()):
        raise NotConvertible("as_strided is not a reshape")
    return _reshape(imp, node, x)


@converts(aten.permute.default)
def _permute(imp, node, x, dims):
    rank = len(dims)
    props = {"dims": i64_array([d % rank for d in dims])}
    return emit1(imp, node, tsr.PermuteOp.create(operands=[imp.operand(x)], result_types=[rtype(node)], properties=props))


@converts(aten.t.default, aten.transpose.int)
def _transpose(imp, node, x, d0=0, d1=1):
    rank = len(node.args[0].meta["val"].shape)
    dims = list(range(rank))
    if rank >= 2:
        d0, d1 = d0 % rank, d1 % rank
        dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute(imp, node, x, dims)


@converts(aten.expand.default)
def _expand(imp, node, x, sizes, *_, **__):
    """An expand; one to sizes known at run time (a dim broadcast from 1 to a
    symbolic size) takes the graph's size values, one per ``?``."""
    t, src = rtype(node), imp.operand(x)
    shape, lead = t.get_shape(), len(t.get_shape()) - len(shape_of(src.type))
    operands = []
    if any(n == DYNAMIC and (d < lead or shape_of(src.type)[d - lead] != DYNAMIC) for d, n in enumerate(shape)):
        operands = [imp.size_value(v) for v, n in zip(sizes, shape) if n == DYNAMIC]
    return emit1(imp, node, tsr.ExpandOp.create(operands=[src, *operands], result_types=[t]))


def slice_op(imp, node, x, dim, start, end, step, rt) -> SSAValue:
    props = {k: IntegerAttr(v, i64) for k, v in (("dim", dim), ("start", start), ("end", end), ("step", step))}
    return emit1(imp, node, tsr.SliceOp.create(operands=[x], result_types=[rt], properties=props))


SLICE_END = 2**63 - 1
"""ATen's ``end`` of a slice that runs to the end (``x[1:]``), as ``tsr.slice`` keeps it for a dynamic dim."""


@converts(aten.slice.Tensor)
def _slice(imp, node, x, dim=0, start=None, end=None, step=1):
    shape = node.args[0].meta["val"].shape
    dim = dim % len(shape)
    if not isinstance(shape[dim], int):  # a symbolic size: Python's bounds, kept for run time
        start, end = 0 if start is None else start, SLICE_END if end is None else min(end, SLICE_END)
        if not all(isinstance(v, int) for v in (start, end, step)):
            raise NotConvertible("a slice with symbolic bounds")
        return slice_op(imp, node, imp.operand(x), dim, start, end, step, rtype(node))
    start, end, _ = slice(start, end, step).indices(shape[dim])
    end = max(end, start)
    return slice_op(imp, node, imp.operand(x), dim, start, end, step, rtype(node))


@converts(aten.split.Tensor, aten.split_with_sizes.default)
def _split(imp, node, x, sizes, dim=0):
    """The pieces of ``split``/``chunk`` as slices (a list that ``getitem`` reads).

        %a, %b, %c = aten.split(%qkv, 8, 1)       (qkv: 2x24x16)
        // becomes
        %a = tsr.slice %qkv {dim = 1, start = 0, end = 8, step = 1} ... (and 8..16, 16..24)"""
    shape = node.args[0].meta["val"].shape
    dim = dim % len(shape)
    pieces = node.meta["val"]
    lengths = [p.shape[dim] for p in pieces]
    if not all(isinstance(n, int) for n in lengths):
        raise NotConvertible("split of a symbolic size")
    out, start = [], 0
    for piece, n in zip(pieces, lengths):
        out.append(slice_op(imp, node, imp.operand(x), dim, start, start + n, 1, tensor_type(piece)))
        start += n
    return out


def _select_op(imp, node, x, dim: int, index: int, t: TensorType) -> SSAValue:
    """Index ``index`` of dim ``dim`` of ``x`` (of ``node``'s operand shape) as a
    slice of size 1 reshaped without it, to type ``t``."""
    shape = list(node.args[0].meta["val"].shape)
    kept = shape[:dim] + [1] + shape[dim + 1 :]
    mid = TensorType(t.get_element_type(), [n if isinstance(n, int) else DYNAMIC for n in kept],
                     tsr.LayoutAttr(layout_of(imp.operand(x).type)))
    s = slice_op(imp, node, imp.operand(x), dim, index, index + 1, 1, mid)
    return reshape_to(imp, node, s, t, kept, shape[:dim] + shape[dim + 1:])


@converts(aten.unbind.int)
def _unbind(imp, node, x, dim=0):
    """Each index of ``dim`` as ``select`` makes it."""
    shape = node.args[0].meta["val"].shape
    dim = dim % len(shape)
    if not isinstance(shape[dim], int):
        raise NotConvertible("unbind of a symbolic size")
    return [_select_op(imp, node, x, dim, i, tensor_type(piece)) for i, piece in enumerate(node.meta["val"])]


@converts(aten.select.int)
def _select(imp, node, x, dim, index):
    shape = node.args[0].meta["val"].shape
    dim = dim % len(shape)
    return _select_op(imp, node, x, dim, index % shape[dim], rtype(node))


@converts(aten.cat.default)
def _cat(imp, node, xs, dim=0):
    vals = [imp.operand(x) for x in xs if x.meta["val"].numel() > 0 or len(xs) == 1]
    if not vals:  # every input empty: ATen makes the (empty) result
        raise NotConvertible("cat of empty tensors only")
    rank = len(rtype(node).get_shape())
    props = {"dim": IntegerAttr(dim % rank, i64)}
    return emit1(imp, node, tsr.ConcatOp.create(operands=vals, result_types=[rtype(node)], properties=props))


@converts(aten.constant_pad_nd.default)
def _pad(imp, node, x, pad, value=0.0):
    rank = len(node.args[0].meta["val"].shape)
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    props = {"low": i64_array(low), "high": i64_array(high)}
    ops = [imp.operand(x), imp.scalar(float(value) if not isinstance(value, bool) else value)]
    return emit1(imp, node, tsr.PadOp.create(operands=ops, result_types=[rtype(node)], properties=props))


# -- reductions ----------------------------------------------------------------------
def _reduce(imp, node, cls, x, dims, keepdim, extra=None) -> SSAValue:
    rank = len(node.args[0].meta["val"].shape)
    props = {"dims": i64_array(_norm_dims(dims, rank)), "keepdim": BoolAttr.from_bool(bool(keepdim))}
    props |= extra or {}
    return emit1(imp, node, cls.create(operands=[imp.operand(x)], result_types=[rtype(node)], properties=props))


@converts(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default)
def _sum_mean(imp, node, x, dims=None, keepdim=False, dtype=None):
    if dtype is not None and dtype != node.args[0].meta["val"].dtype:
        raise NotConvertible("reduction with a dtype")
    cls = tsr.SumOp if node.target in (aten.sum.dim_IntList, aten.sum.default) else tsr.MeanOp
    return _reduce(imp, node, cls, x, dims, keepdim)


@converts(aten.amax.default, aten.amin.default)
def _amax(imp, node, x, dims=(), keepdim=False):
    cls = tsr.AmaxOp if node.target is aten.amax.default else tsr.AminOp
    return _reduce(imp, node, cls, x, dims, keepdim)


def _correction(correction) -> dict:
    return {"correction": FloatAttr(1.0 if correction is None else float(correction), f64)}


@converts(aten.var.correction)
def _var(imp, node, x, dims=None, *, correction=None, keepdim=False):
    return _reduce(imp, node, tsr.VarOp, x, dims, keepdim, _correction(correction))


@converts(aten.var_mean.correction)
def _var_mean(imp, node, x, dims=None, *, correction=None, keepdim=False):
    var_t, mean_t = (tensor_type(v) for v in node.meta["val"])
    rank = len(node.args[0].meta["val"].shape)
    props = {"dims": i64_array(_norm_dims(dims, rank)), "keepdim": BoolAttr.from_bool(bool(keepdim))}
    v = imp.emit(tsr.VarOp.create(operands=[imp.operand(x)], result_types=[var_t], properties=props | _correction(correction)), node.name)
    m = imp.emit(tsr.MeanOp.create(operands=[imp.operand(x)], result_types=[mean_t], properties=props), node.name)
    return [v.results[0], m.results[0]]


# -- linear algebra, conv, upsample ----------------------------------------------------
@converts(aten.mm.default)
def _mm(imp, node, a, b):
    return _binary(imp, node, tsr.MatmulOp, a, b)


@converts(aten.bmm.default)
def _bmm(imp, node, a, b):
    return _binary(imp, node, tsr.BmmOp, a, b)


@converts(aten._int_mm.default)
def _int_mm(imp, node, a, b):
    return _binary(imp, node, tsr.IntMmOp, a, b)


@converts(aten.addmm.default)
def _addmm(imp, node, bias, a, b, *, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise NotConvertible("addmm with alpha/beta")
    ops = [imp.operand(v) for v in (bias, a, b)]
    return emit1(imp, node, tsr.AddmmOp.create(operands=ops, result_types=[rtype(node)]))


@converts(aten.convolution.default)
def _conv(imp, node, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    if transposed:
        raise NotConvertible("transposed convolution")
    nsp = len(node.args[0].meta["val"].shape) - 2
    static = [node.args[0].meta["val"].shape[1], *node.args[1].meta["val"].shape, groups, *stride, *padding, *dilation]
    if not all(isinstance(n, int) for n in static):  # a weight given as a graph input of dynamic sizes
        raise NotConvertible("a convolution whose channels, kernel or arguments are symbolic")

    ops = [imp.operand(x), imp.operand(w)] + ([imp.operand(b)] if b is not None else [])
    props = {
        "stride": i64_array(per_spatial_dim(stride, nsp)),
        "padding": i64_array(per_spatial_dim(padding, nsp)),
        "dilation": i64_array(per_spatial_dim(dilation, nsp)),
        "groups": IntegerAttr(groups, i64),
    }
    return emit1(imp, node, tsr.ConvOp.create(operands=ops, result_types=[rtype(node)], properties=props))


def _upsample(imp, node, x, mode, scales, align_corners=None):
    props = {"mode": StringAttr(mode)}
    if scales is not None and all(s is not None for s in scales):
        props["scales"] = DenseArrayBase.from_list(f64, [float(s) for s in scales])
    if align_corners is not None:
        props["align_corners"] = BoolAttr.from_bool(bool(align_corners))
    return emit1(imp, node, tsr.UpsampleOp.create(operands=[imp.operand(x)], result_types=[rtype(node)], properties=props))


@converts(aten.upsample_nearest1d.vec, aten.upsample_nearest2d.vec, aten.upsample_nearest3d.vec)
def _nearest_vec(imp, node, x, output_size, scale_factors):
    return _upsample(imp, node, x, "nearest", scale_factors)


@converts(aten.upsample_nearest1d.default, aten.upsample_nearest2d.default, aten.upsample_nearest3d.default)
def _nearest(imp, node, x, output_size, *scales):
    return _upsample(imp, node, x, "nearest", scales or None)


NEAREST_EXACT = (aten._upsample_nearest_exact1d, aten._upsample_nearest_exact2d, aten._upsample_nearest_exact3d)


@converts(*(p.vec for p in NEAREST_EXACT), *(p.default for p in NEAREST_EXACT))
def _nearest_exact(imp, node, x, output_size, *scales):
    """``mode="nearest-exact"`` reads source index ``floor((dst + 0.5) / s)``. Where
    each output size is a whole multiple ``k`` of the input's (and a given scale is
    ``k``), that is ``floor(dst / k)``: ``nearest``'s, which the upsample folds
    build on. Any other scale stays ATen's.

        aten._upsample_nearest_exact2d(%x, [32, 32], 2.0, 2.0)     (x: 1x8x16x16)
        -> tsr.upsample %x {mode = "nearest", scales = array<f64: 2.0, 2.0>}"""
    if node.target in (p.vec for p in NEAREST_EXACT):
        scales = tuple(scales[0]) if scales and scales[0] is not None else ()
    sizes_in = node.args[0].meta["val"].shape[2:]
    sizes_out = node.meta["val"].shape[2:]
    ratios = [_whole_ratio(i, o) for i, o in zip(sizes_in, sizes_out)]
    if None in ratios:
        raise NotConvertible("nearest-exact at a fractional scale")
    if any(s is not None and float(s) != k for s, k in zip(scales, ratios)):
        raise NotConvertible("nearest-exact with a scale other than its size ratio")
    return _upsample(imp, node, x, "nearest", ratios)


def _whole_ratio(n_in, n_out) -> int | None:
    """``k`` where ``n_out == k * n_in`` (symbolic sizes: proven without adding guards), else None."""
    if isinstance(n_in, int) and isinstance(n_out, int):
        return n_out // n_in if n_in > 0 and n_out % n_in == 0 else None
    from torch.fx.experimental.symbolic_shapes import statically_known_true as known

    k = size_hint(n_out) // max(1, size_hint(n_in))
    return k if k >= 1 and known(n_out == k * n_in) else None


@converts(aten.upsample_bilinear2d.vec)
def _bilinear_vec(imp, node, x, output_size, align_corners, scale_factors):
    return _upsample(imp, node, x, "bilinear", scale_factors, align_corners)


@converts(aten.upsample_bilinear2d.default)
def _bilinear(imp, node, x, output_size, align_corners, *scales):
    return _upsample(imp, node, x, "bilinear", scales or None, align_corners)


# -- constants ---------------------------------------------------------------------
@converts(aten.full.default, aten.scalar_tensor.default, aten.zeros.default, aten.ones.default)
def _full(imp, node, *args, **kw):
    val = node.meta["val"]
    if node.target is aten.full.default:
        fill = args[1]
    elif node.target is aten.scalar_tensor.default:
        fill = args[0]
    else:
        fill = 0 if node.target is aten.zeros.default else 1
    t = rtype(node)
    if not isinstance(fill, (int, float, bool)):
        raise NotConvertible("symbolic fill value")
    if not is_static(t.get_shape()):
        raise NotConvertible("a constant of dynamic size")  # ATen's call, given its sizes at run time
    if val.dtype.is_floating_point:
        fill = float(fill)
    else:
        fill = int(fill)
    return emit1(imp, node, tsr.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [fill])))


# -- normalization -------------------------------------------------------------------
@converts(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(imp, node, x, weight, bias, mean, var, momentum, eps):
    """Inference BatchNorm as the ops of its ATen decomposition
    (``native_batch_norm_helper``), emitted here: the trace keeps the op whole
    (``decompositions.KEPT_WHOLE``), as tracing that decomposition costs
    AOTAutograd ~10 ms a layer on every process's first call. Statistics in the
    computation dtype (f32 for f16/bf16), per channel ``[C, 1, ..]``:

        %y, %m, %r = aten._native_batch_norm_legit_no_training(%x, %w, %b, %mean, %var, 0.1, 1e-05)
        // becomes
        %inv = tsr.reciprocal(tsr.sqrt(tsr.add %var, 1e-05))
        %y = tsr.add(tsr.mul(tsr.mul(tsr.sub %x, %mean[C,1,1]), %inv[C,1,1]), %w[C,1,1]), %b[C,1,1]

    Saved statistics that something reads keep the call whole."""
    if any(u.target is not getitem or u.args[1] != 0 for u in node.users):
        raise NotConvertible("the saved statistics are read")
    xv = node.args[0].meta["val"]
    if not isinstance(xv.shape[1], int):
        raise NotConvertible("BatchNorm over a symbolic number of channels")
    out_t = tensor_type(node.meta["val"][0])
    compute = torch.float32 if xv.dtype in (torch.float16, torch.bfloat16) else xv.dtype
    channel = [xv.shape[1]] + [1] * (xv.dim() - 2)

    def typed(dtype, shape, layout) -> TensorType:
        return TensorType(dtypes.to_mlir(dtype), shape, tsr.LayoutAttr(layout))

    def op(cls, operands, dtype, shape, layout) -> SSAValue:
        return emit1(imp, node, cls.create(operands=operands, result_types=[typed(dtype, shape, layout)]))

    def per_channel(v, dtype) -> SSAValue:
        """``v`` (``[C]``) in ``dtype``, shaped ``[C, 1, ..]`` to broadcast over ``x``."""
        value, vdtype = imp.operand(v), v.meta["val"].dtype
        if vdtype != dtype:
            value = op(tsr.ConvertOp, [value], dtype, [channel[0]], [0])
        return op(tsr.ReshapeOp, [value], dtype, channel, list(range(len(channel))))

    flat = [channel[0]]
    v = imp.operand(var) if var.meta["val"].dtype == compute else op(tsr.ConvertOp, [imp.operand(var)], compute, flat, [0])
    inv = op(tsr.ReciprocalOp, [op(tsr.SqrtOp, [op(tsr.AddOp, [v, imp.scalar(float(eps))], compute, flat, [0])],
                                   compute, flat, [0])], compute, flat, [0])
    inv = op(tsr.ReshapeOp, [inv], compute, channel, list(range(len(channel))))
    shape, layout = list(out_t.get_shape()), layout_of(out_t)
    y = op(tsr.SubOp, [imp.operand(x), per_channel(mean, compute)], compute, shape, layout)
    y = op(tsr.MulOp, [y, inv], compute, shape, layout)
    dtype = compute
    for v, cls in ((weight, tsr.MulOp), (bias, tsr.AddOp)):
        if v is not None:
            dtype = torch.promote_types(dtype, v.meta["val"].dtype)
            y = op(cls, [y, per_channel(v, v.meta["val"].dtype)], dtype, shape, layout)
    if dtype != xv.dtype:
        y = op(tsr.ConvertOp, [y], xv.dtype, shape, layout)
    return [y, None, None]
