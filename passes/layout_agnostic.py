"""Which ops compute in any layout, and what a change of dim order moves: what
``hoist-relayouts`` asks of an op before it moves a relayout above it.

    hoistable(relu, nchw, nhwc)                 # True: elementwise
    hoistable(mean over (2, 3), nchw, nhwc)     # True: keepdim, over dims the change does not move
    same_memory((1, 440, 1, 1), nchw, nhwc)     # True: a relayout between them is a view
"""

from __future__ import annotations

from itertools import combinations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity
from tessera.dialects.tsr.shapes import shape_of

SAME_RANK_OPS = (*tsr.ELEMENTWISE_OPS, tsr.ConvertOp, tsr.PadOp, tsr.UpsampleOp, tsr.SliceOp, tsr.ConcatOp)

LAYOUT_FOLLOWING_ATEN = frozenset({
    "aten.max_pool2d.default", "aten.max_pool3d.default", "aten.avg_pool2d.default", "aten.avg_pool3d.default",
})
"""ATen ops kept as ``tsr.aten_call`` that compute in the memory format of their
input (channels-last in, channels-last out), one tensor in and one out: pooling.
On channels-last tensors ATen's CPU pools run ~10x faster than on NCHW ones. A
result whose strides differ all the same is copied into its type's layout by
the host program (a layout fix-up), so this is a matter of speed, not of values."""


def moved_dims(src: tuple[int, ...], dst: tuple[int, ...]) -> frozenset[int]:
    """The dims a change of dim order from ``src`` to ``dst`` moves: those outside
    every longest run of dims whose relative order both share.

        moved_dims(nchw, nhwc) == {1}      # the channels move; n, h, w keep their order
    """
    dims = set(src)
    for size in range(len(src), -1, -1):
        keep = [
            set(c)
            for c in combinations(src, size)
            if [d for d in dst if d in c] == list(c)
        ]
        if keep:
            return frozenset(dims - set.intersection(*keep))
    return frozenset(dims)


def hoistable(op: Operation, src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    if isinstance(op, SAME_RANK_OPS):
        return True
    if isinstance(op, tsr.AtenCallOp):
        rank = len(src)
        return (op.callee.data in LAYOUT_FOLLOWING_ATEN and len(op.inputs) == 1 and rank in (4, 5)
                and {src, dst} <= {identity(rank), channels_last(rank)})
    if isinstance(op, tsr.REDUCTION_OPS):
        return bool(op.keepdim.value.data) and not (set(op.reduced_dims()) & moved_dims(src, dst))
    return False


def follows_result(v: SSAValue, op: Operation) -> bool:
    """Whether operand ``v`` takes the result's new layout (else it is read as it is)."""
    if not isinstance(v.type, TensorType):
        return False
    if isinstance(op, tsr.ELEMENTWISE_OPS):
        return shape_of(v.type) == shape_of(op.results[0].type)
    return len(shape_of(v.type)) == len(shape_of(op.results[0].type))


def same_memory(shape: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether dense tensors of ``shape`` in the dim orders ``a`` and ``b`` lay out
    their elements alike: the dims of size other than 1 keep their relative order.

        same_memory((1, 440, 1, 1), nchw, nhwc) is True; same_memory((1, 440, 7, 7), nchw, nhwc) is False
    """
    return [d for d in a if shape[d] != 1] == [d for d in b if shape[d] != 1]
