"""Values of a fused body as vectors of neighbouring elements along one dim.

A reduction kernel that keeps its input's contiguous dim (BatchNorm's
statistics and its backward's sums over a channels-last tensor) computes
``lanes`` kept indices side by side (``ReductionLoops.emit_vector``). What it
sums is often computed, not read: ``sum(dy * (x - mean))``. :class:`LaneValues`
computes such a value at a vector of indices ``i, i+1, ..., i+lanes-1`` along
one dim: a kernel argument is one vector read, an elementwise op one vector
op, a value constant along the dim (``mean`` of shape ``1xCx1x1`` read along
``h``) a scalar broadcast to every lane:

    // sum(dy * (x - mean)) over n, h, w of 8x96x32x32 nhwc, lanes along c:
    %dy = vector.transfer_read %arg0[%n, %c, %h, %w], %pad {permutation_map = (d0, d1, d2, d3) -> (d1)}
    %x = vector.transfer_read %arg1[%n, %c, %h, %w], %pad {...}
    %m = vector.transfer_read %arg2[%c0, %c, %c0, %c0], %pad {...}
    %d = arith.subf %x, %m : vector<16xf32>
    %p = arith.mulf %dy, %d : vector<16xf32>

Slices and pads along other dims keep the lanes together. An op with no
vector form here (a pad along the lanes' dim, a reshape that moves it, a
compare, integer arithmetic) is computed lane by lane by the scalar :class:`ValueEmitter` and
its lanes inserted into a vector, so any body can be computed this way.
"""

from __future__ import annotations

from xdsl.dialects import vector
from xdsl.dialects.builtin import Float32Type, TensorType, VectorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.shapes import elem_of, ints, is_static, numel, shape_of

from . import index_maps as im
from .kernel_builder import KernelBuilder, storage_type
from .scalar_ops import Numerics, ScalarLowering
from .values import Index, ValueEmitter

_ARITH_OPS = frozenset({"tsr.add", "tsr.sub", "tsr.mul", "tsr.div", "tsr.maximum", "tsr.minimum", "tsr.neg",
                        "tsr.relu"})
"""Elementwise ops computed as vector ops on f32 and f64."""
_LANE_OPS = _ARITH_OPS | {"tsr.exp", "tsr.log", "tsr.sqrt", "tsr.rsqrt", "tsr.tanh", "tsr.erf", "tsr.abs",
                          "tsr.reciprocal", "tsr.sigmoid", "tsr.silu", "tsr.gelu", "tsr.floor", "tsr.ceil", "tsr.trunc",
                          "tsr.round"}
"""Elementwise ops computed as vector ops on f32 (the emitter expands their math for vectors
of f32; f64's is a libm call). A compare and a select stay lane by lane: xDSL's
``arith.cmpf`` and ``arith.select`` take a scalar ``i1`` only."""


def is_native(numerics: Numerics, elem: Attribute) -> bool:
    """Whether ``elem`` is a float computed in its own type (f32, f64): its values are vectors as stored."""
    return dtypes.is_float(elem) and numerics.compute(elem) == storage_type(elem)


class _LaneScalars(ScalarLowering):
    """:class:`ScalarLowering` on vectors of ``lanes`` f32: its literals are
    broadcast to every lane."""

    def __init__(self, kb: KernelBuilder, numerics: Numerics, lanes: int):
        super().__init__(kb, numerics)
        self.lanes = lanes

    def splat(self, x: SSAValue) -> SSAValue:
        key = ("splat", x, self.lanes)
        hit = self.kb.cached(key)
        if hit is None:
            hit = self.kb.remember(key, self.kb.value(vector.BroadcastOp(x, VectorType(x.type, [self.lanes]))))
        return hit

    def float_const(self, x: float, elem: Attribute) -> SSAValue:
        return self.splat(super().float_const(x, elem))


class LaneValues:
    """Computes body values of ``values`` (a :class:`ValueEmitter`) as vectors
    of ``lanes`` neighbours along one of their dims."""

    def __init__(self, values: ValueEmitter, lanes: int):
        self.values = values
        self.kb = values.kb
        self.lanes = lanes
        self.sc = _LaneScalars(values.kb, values.sc.num, lanes)

    def whole_body(self) -> bool:
        """Whether every tensor of the body is computed as vector ops, none lane by
        lane: its arguments native floats, its ops elementwise ones with a vector
        form (:meth:`_lane_op`), relayouts, same-type converts and expands.

            %s = tsr.mul %a0, %a1 ...; %r = tsr.sigmoid %s ...   // true
            %r = tsr.reshape %a0, %h, %w ...                     // false: _kept_dim needs static sizes
        """
        if not all(self._native(a) for a in self.values.body.args):
            return False
        for op in self.values.body.ops:
            if not any(isinstance(r.type, TensorType) for r in op.results) or isinstance(op, (tsr.RelayoutOp, tsr.ExpandOp)):
                continue
            if isinstance(op, tsr.ConvertOp) and elem_of(op.input.type) == elem_of(op.result.type):
                continue
            if not (isinstance(op, ELEMENTWISE_OPS) and self._lane_op(op)):
                return False
        return True

    def at(self, v: SSAValue, idx: Index, dim: int | None) -> SSAValue:
        """``v`` at ``idx`` and the next ``lanes - 1`` indices along ``dim`` (None:
        ``v`` is the same along the lanes), a vector of its compute type."""
        hit = self.kb.cached(_key(v, idx, dim))
        return hit if hit is not None else self.given(v, idx, dim, self._compute(v, idx, dim))

    def given(self, v: SSAValue, idx: Index, dim: int | None, vec: SSAValue) -> SSAValue:
        """``vec`` as ``v`` at ``idx`` along ``dim`` from now on: a vector the caller
        has already (a row of a transpose tile, ``lower._tiled_pointwise``)."""
        return self.kb.remember(_key(v, idx, dim), vec)

    def _compute(self, v: SSAValue, idx: Index, dim: int | None) -> SSAValue:
        if dim is None:
            return self.sc.splat(self.values.at(v, idx))
        if isinstance(v, BlockArgument) and v.owner is self.values.body and self._native(v):
            return self._read(self.values.inputs[v], idx, dim)
        op = v.owner
        if isinstance(op, ELEMENTWISE_OPS) and self._lane_op(op):
            return self._elementwise(op, idx, dim)
        if isinstance(op, tsr.RelayoutOp):
            return self.at(op.input, idx, dim)
        if isinstance(op, tsr.ConvertOp) and elem_of(op.input.type) == elem_of(v.type):
            return self.at(op.input, idx, dim)
        if isinstance(op, tsr.ExpandOp):
            src, out = shape_of(op.input.type), shape_of(v.type)
            return self.at(op.input, im.broadcast(self.kb, idx, src, out), _broadcast_dim(dim, src, out))
        if isinstance(op, tsr.PermuteOp):
            dims = ints(op.dims)
            return self.at(op.input, im.permute(idx, dims), dims[dim])
        if isinstance(op, tsr.ReshapeOp):
            src, out = shape_of(op.input.type), shape_of(v.type)
            kept = _kept_dim(src, out, dim)
            if kept is not None:
                return self.at(op.input, im.reshape(self.kb, idx, src, out), kept)
        if isinstance(op, tsr.SliceOp) and op.dim.value.data % len(idx) != dim and op.start.value.data >= 0:
            return self.at(op.input, im.slice_(self.kb, idx, op.dim.value.data % len(idx), op.start.value.data,
                                               op.step.value.data), dim)
        if isinstance(op, tsr.PadOp) and ints(op.low)[dim] == ints(op.high)[dim] == 0 and self._native(v):
            return self._pad(op, idx, dim)
        return self._by_lane(v, idx, dim)

    def _pad(self, op: tsr.PadOp, idx: Index, dim: int) -> SSAValue:
        """A pad along dims other than the lanes': every lane in bounds or none."""
        src, cond = im.pad(self.kb, idx, ints(op.low), ints(op.high), self.values.sizes(op.input))
        x = self.at(op.input, src, dim)
        if cond is None:
            return x
        fill = self.sc.splat(self.values.sc.convert(self.values.at(op.value, ()), op.value.type, elem_of(op.result.type)))
        return self.kb.select(cond, x, fill)

    def _native(self, v: SSAValue) -> bool:
        return is_native(self.values.sc.num, elem_of(v.type))

    def _lane_op(self, op: Operation) -> bool:
        """Whether elementwise ``op`` is computed as vector ops: of operands of its result's
        float type, f32 (:data:`_LANE_OPS`) or f64 (:data:`_ARITH_OPS`)."""
        elem = elem_of(op.results[0].type)
        if op.name not in (_LANE_OPS if isinstance(elem, Float32Type) else _ARITH_OPS):
            return False
        return all(self._native(x) and elem_of(x.type) == elem for x in (*op.operands, *op.results))

    def _elementwise(self, op: Operation, idx: Index, dim: int) -> SSAValue:
        out = shape_of(op.results[0].type)
        args = []
        for x in op.operands:
            if isinstance(x.type, TensorType):
                src = shape_of(x.type)
                at = self.at(x, im.broadcast(self.kb, idx, src, out), _broadcast_dim(dim, src, out))
                args.append((at, elem_of(x.type), True))
            else:
                args.append((self.sc.splat(self.values.at(x, ())), x.type, False))
        return self.sc.elementwise(op, args)

    def _read(self, ref: SSAValue, idx: Index, dim: int) -> SSAValue:
        """One vector read of ``lanes`` elements of kernel argument ``ref`` along ``dim``."""
        return self.kb.read_along(ref, idx, dim, VectorType(ref.type.get_element_type(), [self.lanes]))

    def _by_lane(self, v: SSAValue, idx: Index, dim: int) -> SSAValue:
        """``v`` computed lane by lane by the scalar emitter, its lanes inserted into a vector."""
        kb = self.kb
        lanes = []
        for k in range(self.lanes):
            at = list(idx)
            at[dim] = kb.add(idx[dim], k)
            lanes.append(self.values.at(v, tuple(at)))
        out = self.sc.splat(lanes[0])
        for k in range(1, self.lanes):
            out = kb.value(vector.InsertOp(lanes[k], out, [k]))
        return out


def _key(v: SSAValue, idx: Index, dim: int | None) -> tuple:
    return ("lanes", v, dim, *idx)


def _broadcast_dim(dim: int, src: list[int], out: list[int]) -> int | None:
    """The dim of a broadcast operand of shape ``src`` the lanes along ``dim`` of
    ``out`` walk (None: the operand is the same along them)."""
    d = dim - (len(out) - len(src))
    return None if d < 0 or (src[d] == 1 and out[dim] != 1) else d


def _kept_dim(src: list[int], out: list[int], dim: int) -> int | None:
    """The dim of a reshape's input (static ``src``) that is dim ``dim`` of its
    output ``out``: of the same size, with as many elements after it (row-major),
    so neighbours along one are neighbours along the other."""
    if not is_static(src) or not is_static(out):
        return None
    after = numel(out[dim + 1:])
    for d, n in enumerate(src):
        if n == out[dim] and numel(src[d + 1:]) == after:
            return d
    return None

