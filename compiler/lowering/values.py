"""The scalar value of a ``tsr`` value of a fused body at a logical index.

A fused body is lowered by pulling: the kernel asks for its yielded values at
the index of the output element it writes, and each op asks for its operands
at the indices its index map gives (``index_maps``), down to loads from the
kernel's input memrefs. Within one loop body a (value, index) pair is
computed once; an op used at several indices (a pad's producer, a broadcast
statistic) is computed at each.

    %p = tsr.pad %s, %zero {low = [1], high = [1]}     // value_at(%p, i):
    %s = tsr.silu %x                                   //   j = clamp(i - 1), ok = 1 <= i <= n
                                                       //   select(ok, silu(load %x[j]), 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Block, BlockArgument, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.dim_sources import reshape_anchors
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.shapes import DYNAMIC, elem_of, ints, is_static, shape_of

from . import index_maps as im
from .dim_exprs import dim_expr
from .kernel_builder import KernelBuilder, LoweringError
from .scalar_ops import ScalarLowering

Index = tuple[SSAValue, ...]


class ValueEmitter:
    """Emits the scalar ops computing values of ``body`` (a ``tsr.fused`` block
    whose arguments are read from ``inputs``, the kernel's input memrefs)."""

    def __init__(self, kb: KernelBuilder, scalars: ScalarLowering, body: Block, inputs: Sequence[SSAValue]):
        self.kb = kb
        self.sc = scalars
        self.body = body
        self.refs = list(inputs)
        self.inputs = dict(zip(body.args, inputs))
        self.picks: dict[tsr.ConcatOp, tuple[SSAValue, int]] = {}
        """Concats known to read one operand in the loop being emitted: op -> (the
        loop's index value along the concat's dim, the operand); ``concat_segments``."""

    def sizes(self, v: SSAValue) -> list[int | SSAValue]:
        """The sizes of body value ``v``: numbers, and index values read from the
        input memrefs for its dynamic dims (``dim_exprs``)."""
        return [n if n != DYNAMIC else self.extent(v, d) for d, n in enumerate(shape_of(v.type))]

    def extent(self, v: SSAValue, d: int) -> SSAValue:
        """The size of body value ``v`` along ``d`` as an index value."""
        e = dim_expr(v, d, self.body)
        if isinstance(e, int):
            return self.kb.index(e)
        kb = self.kb
        return kb.div(kb.add(kb.mul(kb.dim(self.refs[e.operand], e.dim), e.mul), e.add), e.div)

    def at(self, v: SSAValue, idx: Index) -> SSAValue:
        """The value of ``v`` at logical index ``idx``, in its compute type."""
        key = ("value", v, *idx)
        hit = self.kb.cached(key)
        if hit is None:
            hit = self.kb.remember(key, self._compute(v, idx))
        return hit

    def _compute(self, v: SSAValue, idx: Index) -> SSAValue:
        kb = self.kb
        if isinstance(v, BlockArgument):
            return self.sc.load(self.inputs[v], idx, elem_of(v.type))
        op = v.owner
        if isinstance(op, tsr.ConstantOp):
            if isinstance(op.value, (FloatAttr, IntegerAttr)):
                return self.sc.literal(op.value)
            raise LoweringError("a tensor constant inside a fused body cannot be lowered; pass it as an operand")
        out_shape = shape_of(v.type)
        if isinstance(op, ELEMENTWISE_OPS):
            args = []
            for x in op.operands:
                if isinstance(x.type, TensorType):
                    args.append((self.at(x, im.broadcast(kb, idx, shape_of(x.type), out_shape)), elem_of(x.type), True))
                else:
                    args.append((self.at(x, ()), x.type, False))
            return self.sc.elementwise(op, args)
        if isinstance(op, tsr.ConvertOp):
            return self.sc.convert(self.at(op.input, idx), elem_of(op.input.type), elem_of(v.type))
        if isinstance(op, tsr.RelayoutOp):
            return self.at(op.input, idx)
        if isinstance(op, tsr.ExpandOp):
            return self.at(op.input, im.broadcast(kb, idx, shape_of(op.input.type), out_shape))
        if isinstance(op, tsr.PermuteOp):
            return self.at(op.input, im.permute(idx, ints(op.dims)))
        if isinstance(op, tsr.ReshapeOp):
            src = shape_of(op.input.type)
            if is_static(src) and is_static(out_shape):
                return self.at(op.input, im.reshape(kb, idx, src, out_shape))
            anchors = reshape_anchors(op)
            if anchors is None:
                raise LoweringError("a reshape whose dynamic dims are not one input dim each is not lowered to a kernel")
            return self.at(op.input, im.anchored_reshape(kb, idx, src, out_shape, anchors))
        if isinstance(op, tsr.SliceOp):
            dim = op.dim.value.data % len(out_shape)
            start: int | SSAValue = op.start.value.data
            if start < 0:  # a dynamic dim's Python bound, from its end (clamped at 0)
                n = self.extent(op.input, dim)
                start = kb.select(kb.cmp("slt", n, -start), kb.index(0), kb.add(n, start))
            return self.at(op.input, im.slice_(kb, idx, dim, start, op.step.value.data))
        if isinstance(op, tsr.PadOp):
            return self._pad(op, idx)
        if isinstance(op, tsr.ConcatOp):
            return self._concat(op, idx)
        if isinstance(op, tsr.UpsampleOp) and op.mode.data == "nearest":
            scales = list(op.scales.get_values()) if op.scales is not None else None
            return self.at(op.input, im.upsample_nearest(kb, idx, shape_of(op.input.type), out_shape, scales))
        if isinstance(op, tsr.PolyphaseInterleaveOp):
            return self.at(op.input, im.polyphase_interleave(kb, idx, ints(op.scales), op.dim_shifts(), out_shape[1]))
        raise LoweringError(f"'{op.name}' cannot be computed inside a pointwise kernel")

    def _pad(self, op: tsr.PadOp, idx: Index) -> SSAValue:
        src, cond = im.pad(self.kb, idx, ints(op.low), ints(op.high), self.sizes(op.input))
        x = self.at(op.input, src)
        if cond is None:
            return x
        elem = elem_of(op.result.type)
        fill = self.sc.convert(self.at(op.value, ()), op.value.type, elem)
        return self.kb.select(cond, x, fill)

    def _concat(self, op: tsr.ConcatOp, idx: Index) -> SSAValue:
        """A chain of ``scf.if``: each operand is computed only where it is read;
        in a loop over one operand's segment (:attr:`picks`), that operand."""
        kb = self.kb
        dim = op.dim.value.data % len(idx)
        sizes = [shape_of(x.type)[dim] for x in op.inputs]
        if DYNAMIC in sizes:
            raise LoweringError("a concat along a dynamic dim is not lowered to a kernel")
        offsets = im.concat_offsets(sizes)
        elem = elem_of(op.result.type)
        ctype = self.sc.num.compute(elem)

        def piece(k: int) -> SSAValue:
            x = op.inputs[k]
            at = list(idx)
            at[dim] = kb.sub(idx[dim], offsets[k])
            return self.sc.convert(self.at(x, tuple(at)), elem_of(x.type), elem)

        pick = self.picks.get(op)
        if pick is not None and idx[dim] is pick[0]:
            return piece(pick[1])

        def chain(k: int) -> SSAValue:
            if k == len(sizes) - 1:
                return piece(k)
            cond = kb.cmp("slt", idx[dim], offsets[k + 1])
            (r,) = kb.if_else(cond, [ctype], lambda: [piece(k)], lambda: [chain(k + 1)])
            return r

        return chain(0)
