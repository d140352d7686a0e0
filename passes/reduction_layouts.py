"""The layout a pooling reduction reads, chosen for the ops before it
(:class:`OrientReduction`, a pattern of ``hoist-relayouts``).

A reduction whose result is the same memory in ``nchw`` and ``nhwc`` (a global
pool, ``tensor<1x440x1x1xf32>``) can read its input in either layout; the
relayout of its result is a view (without ``keepdim`` the result has a layout
of its own and needs none). Which layout it reads decides whether the
ops before it can move. The last stage of a residual network after
``assign-layouts``: each conv computes channels-last, its result goes back to
``nchw`` for the residual adds, whose chain ends in the global mean, and every
relu there also feeds the next conv through a relayout to ``nhwc``:

    %a = tsr.add %r0, %c1 : (tensor<1x440x7x7xf32, #tsr.layout<nchw>>, ...) -> tensor<1x440x7x7xf32, #tsr.layout<nchw>>
    %r = tsr.relu %a : (...) -> tensor<1x440x7x7xf32, #tsr.layout<nchw>>
    %m = tsr.mean %r {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x440x1x1xf32, #tsr.layout<nchw>>
    // becomes
    %rr = tsr.relayout %r : (...) -> tensor<1x440x7x7xf32, #tsr.layout<nhwc>>
    %mm = tsr.mean %rr {dims = array<i64: 2, 3>, keepdim = true} : (...) -> tensor<1x440x1x1xf32, #tsr.layout<nhwc>>
    %m  = tsr.relayout %mm : (...) -> tensor<1x440x1x1xf32, #tsr.layout<nchw>>   // a view

and the relayout then climbs the chain, which computes channels-last (activations
left in NCHW by the x86 pipeline: ResNet-50 6 -> 0, RegNetY-400MF 12 -> 0, BENCHMARKS.md).
Left in ``nchw``, nothing above the mean has only relayouts as users, so no
relayout could start to climb.

The switch is made where it pays, counting what ``hoist-relayouts`` will do:
the ops it would move (:func:`moved_ops`) must include the reduction's
producer, and the relayouts that then go must outnumber those added
(:func:`relayouts_saved`). Only the contiguous and channels-last orders of a
4-D or 5-D tensor swap, and only for reductions over dims that swap does not move.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity, layout_of, with_layout
from tessera.dialects.tsr.shapes import shape_of

from .layout_agnostic import follows_result, hoistable, moved_dims, same_memory


def other_layout(perm: tuple[int, ...]) -> tuple[int, ...] | None:
    """The contiguous and channels-last orders of a 4-D or 5-D tensor, each the other's; else None."""
    rank = len(perm)
    if rank not in (4, 5):
        return None
    return {identity(rank): channels_last(rank), channels_last(rank): identity(rank)}.get(perm)


def _movable(op: Operation, src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    """An op ``hoist-relayouts`` can move from ``src`` to ``dst``: one tensor result, in ``src``."""
    return (len(op.results) == 1 and isinstance(op.results[0].type, TensorType)
            and layout_of(op.results[0].type) == src and hoistable(op, src, dst))


def moved_ops(x: SSAValue, reduction: Operation, src: tuple[int, ...], dst: tuple[int, ...]) -> set[Operation]:
    """The ops at and above ``x``'s producer that ``hoist-relayouts`` would move to
    ``dst`` once ``reduction`` reads ``x`` in ``dst``: layout-agnostic ops each of
    whose users is ``reduction``, a relayout to ``dst``, or another of them reading
    it as an operand that follows its result (the greatest such set)."""
    region: set[Operation] = set()
    stack = [x.owner] if isinstance(x.owner, Operation) else []
    while stack:
        op = stack.pop()
        if op in region or not _movable(op, src, dst):
            continue
        region.add(op)
        stack.extend(v.owner for v in op.operands if follows_result(v, op) and isinstance(v.owner, Operation))

    def stays(op: Operation) -> bool:
        want = with_layout(op.results[0].type, dst)
        return not all(u.operation is reduction
                       or (isinstance(u.operation, tsr.RelayoutOp) and u.operation.result.type == want)
                       or (u.operation in region and follows_result(op.results[0], u.operation))
                       for u in op.results[0].uses)

    while gone := {op for op in region if stays(op)}:
        region -= gone
    return region


def _root(v: SSAValue) -> SSAValue:
    """The value a chain of relayouts ending in ``v`` starts from (``cancel-relayouts`` folds the chain onto it)."""
    while isinstance(v.owner, tsr.RelayoutOp):
        v = v.owner.input
    return v


def relayouts_saved(moved: set[Operation], dst: tuple[int, ...]) -> int:
    """The relayouts that go less those added when the ``moved`` ops compute in
    ``dst``: those to ``dst`` of their results go; an operand relayouted from a
    value in ``dst`` for them alone goes too; any other operand not in ``dst``
    gains one. Chains of relayouts count as the one ``cancel-relayouts`` leaves."""
    saved = 0
    for op in moved:
        saved += sum(1 for u in op.results[0].uses if isinstance(u.operation, tsr.RelayoutOp))
        for v in op.operands:
            if not follows_result(v, op) or v.owner in moved or layout_of(v.type) == dst:
                continue
            if layout_of(_root(v).type) != dst:
                saved -= 1
            elif all(u.operation in moved for u in v.uses):
                saved += 1
    return saved


class OrientReduction(RewritePattern):
    """A reduction whose result is the same memory in either layout reads its input
    in the other one where the ops before it then move there and that saves relayouts,
    or where its input is a relayout from that layout (``cancel-relayouts`` then folds
    the pair: a training BatchNorm's statistics read the conv's channels-last result
    itself, not a contiguous copy of it); each reduction once (the walk that hoists
    the relayouts never swings it back and forth)."""

    def __init__(self) -> None:
        self._oriented: set[Operation] = set()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tsr.REDUCTION_OPS) or op in self._oriented:
            return
        x, result = op.input, op.results[0]
        src = layout_of(x.type)
        dst = other_layout(src)
        if dst is None or set(op.reduced_dims()) & moved_dims(src, dst):
            return
        keepdim = bool(op.keepdim.value.data)  # else the result's layout is its own, whatever the input's
        if keepdim and (layout_of(result.type) != src or not same_memory(tuple(shape_of(result.type)), src, dst)):
            return
        relayouted = isinstance(x.owner, tsr.RelayoutOp) and layout_of(_root(x).type) == dst
        if not relayouted:
            moved = moved_ops(x, op, src, dst)
            if x.owner not in moved or relayouts_saved(moved, dst) <= 0:
                return
        self._oriented.add(op)
        read = tsr.RelayoutOp.create(operands=[x], result_types=[with_layout(x.type, dst)])
        rewriter.insert(read)
        op.operands[0] = read.results[0]
        if not keepdim:
            rewriter.notify_op_modified(op)
            return
        old: TensorType = result.type
        name = result.name_hint
        new = rewriter.replace_value_with_new_type(result, with_layout(old, dst))
        back = tsr.RelayoutOp.create(operands=[new], result_types=[old])
        back.results[0].name_hint = name
        rewriter.insert(back, InsertPoint.after(op))
        rewriter.replace_uses_with_if(new, back.results[0], lambda use: use.operation is not back)
