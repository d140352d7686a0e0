"""The dims a pointwise kernel's innermost loop walks as one row.

A pointwise kernel loops over its output's dims in memory order, the
innermost (contiguous) one as an ``scf.for`` (``lower._pointwise_kernel``). In
an NCHW tensor of small planes that loop is short (``w`` = 2-16), and where
``w`` is a run-time size LLVM's vectorized loop never starts. Where every
tensor of the kernel stores the innermost dims the same way, adjacent and in
one order, and either holds them whole or broadcasts over all of them, they
are one row: the kernel reads its arguments through ``memref.collapse_shape``
and loops over ``h * w`` (``KernelBuilder.collapse``):

    %y = tsr.fused (%x, %s) : (tensor<?x144x?x?xf32>, tensor<?x144x1x1xf32>) -> tensor<?x144x?x?xf32>
    // row dims (2, 3): the grid is (n, c), the loop runs over h * w
    %x2 = memref.collapse_shape %x [[0], [1], [2, 3]] : memref<?x144x?x?xf32, strided<[?, ?, ?, 1]>>
                                                    into memref<?x144x?xf32, strided<[?, ?, 1]>>

The row grows outward from the innermost dim while it is short
(:data:`SHORT_ROW` elements, a run-time size counted as :data:`DYNAMIC_GUESS`)
and stays at most :data:`LONGEST_ROW`: the dims outside it stay the parallel
grid. Only ops that read their operands at the index they write (elementwise
ops, converts, relayouts, broadcasts) may be in the body; a group's dims must
be consecutive logical dims too (what ``collapse_shape`` can merge), and the
innermost dim of the group of a static stride in every collapsed memref (the
row's stride, whatever a size-1 dim's stride is at run time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.shapes import DYNAMIC, shape_of

from .kernel_builder import dynamic_strides, loop_dims

SHORT_ROW = 64
"""A row shorter than this takes in the next dim out."""
LONGEST_ROW = 4096
"""A row is never made longer than this (the grid keeps the rest)."""
DYNAMIC_GUESS = 16
"""What a run-time size counts as in the two bounds above."""

_ROW_OPS = (*ELEMENTWISE_OPS, tsr.ConvertOp, tsr.RelayoutOp, tsr.ExpandOp, tsr.ConstantOp)


def row_dims(op: tsr.FusedOp) -> tuple[int, ...] | None:
    """The logical dims (outermost first, two or more) that ``op``'s pointwise
    kernel walks as one row, or None where its innermost dim stays the row."""
    tensors = _tensors(op)
    if tensors is None:
        return None
    shape, values = tensors
    dims = loop_dims(op.outs[0].type)
    if len(dims) < 2:
        return None
    group = [dims[-1]]
    for d in reversed(dims[:-1]):
        now, nxt = _guess(shape, group), _guess(shape, [d])
        if now >= SHORT_ROW or now * nxt > LONGEST_ROW or not all(_merges(t, shape, d, group[0]) for t in values):
            break
        group.insert(0, d)
    return _mergeable(group, values)


def tile_dims(op: tsr.FusedOp, width: int) -> tuple[int, ...] | None:
    """The dims of a kernel that transposes (an input read across its contiguous
    dim, ``transpose_tiles``) that every tensor stores alike, as one dim of the
    tiles: NCHW <-> NHWC's ``h, w``. Merged where a plane is of run-time size or
    narrower than a tile (2x2 to 7x7 planes: a 16-long dim of tiles, not an edge
    tile or a strided read per row). None: the dims are tiled as they are."""
    tensors = _tensors(op)
    if tensors is None:
        return None
    shape, values = tensors
    dims = loop_dims(op.outs[0].type)
    for start in range(len(dims) - 1):
        group = [dims[start]]
        for d in dims[start + 1:]:
            if not all(_merges(t, shape, group[-1], d) for t in values):
                break
            group.append(d)
        if len(group) > 1 and (DYNAMIC in [shape[d] for d in group] or shape[group[-1]] < width):
            return _mergeable(group, values)
    return None


def _tensors(op: tsr.FusedOp) -> tuple[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] | None:
    """The output's shape and each tensor's shape and dim order aligned to it,
    where every op of the body reads its operands at the index it writes."""
    body = op.body.block
    if any(not isinstance(o, (*_ROW_OPS, tsr.YieldOp)) for o in body.ops):
        return None
    shape = shape_of(op.outs[0].type)
    values = [_aligned(v.type, len(shape)) for v in (*body.args, *(r for o in body.ops for r in o.results), *op.outs)
              if isinstance(v.type, TensorType)]
    return None if any(v is None for v in values) else (shape, values)  # type: ignore[return-value]


def _mergeable(group: list[int], values) -> tuple[int, ...] | None:
    """``group`` where ``memref.collapse_shape`` can merge it in every tensor that holds it."""
    if len(group) < 2 or group != list(range(group[0], group[0] + len(group))):
        return None
    if not all(_static_row_stride(v, group) for v in values if holds_row(v[0], group)):
        return None
    return tuple(group)


def _aligned(t: TensorType, rank: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The shape and dim order of a tensor type broadcast to ``rank`` (numpy's
    right alignment: the dims it lacks are outermost, of size 1), None if higher."""
    s, order = shape_of(t), layout_of(t)
    lead = rank - len(s)
    if lead < 0:
        return None
    return (1,) * lead + tuple(s), tuple(range(lead)) + tuple(d + lead for d in order)


def holds_row(shape: Sequence[int], group: Sequence[int]) -> bool:
    """Whether a tensor of ``shape`` holds the row dims whole (else it broadcasts over them)."""
    return any(shape[d] != 1 for d in group)


def _guess(shape: Sequence[int], dims: Sequence[int]) -> int:
    return math.prod(DYNAMIC_GUESS if shape[d] == DYNAMIC else shape[d] for d in dims)


def _merges(v: tuple[tuple[int, ...], tuple[int, ...]], out_shape: Sequence[int], a: int, b: int) -> bool:
    """Whether dim ``a`` can join ``b`` (the outer end of the row) in a tensor of
    (aligned) shape and dim order ``v``: both broadcast, or both whole and ``a``
    just outside ``b`` in memory (dims of size 1 between them take no room)."""
    s, order = v
    if s[a] == 1 and s[b] == 1:
        return True
    if s[a] != out_shape[a] or s[b] != out_shape[b] or out_shape[a] == 1:
        return False
    i, j = order.index(a), order.index(b)
    return i < j and all(s[d] == 1 for d in order[i + 1:j])


def _static_row_stride(v: tuple[tuple[int, ...], tuple[int, ...]], group: Sequence[int]) -> bool:
    """The row's stride, its innermost dim's, is known when compiling."""
    return dynamic_strides(*v)[group[-1]] is not None


def collapsed_groups(rank: int, group: Sequence[int]) -> list[list[int]]:
    """The reassociation of ``memref.collapse_shape`` merging ``group``: ``[[0], [1], [2, 3]]``."""
    return [[d] for d in range(group[0])] + [list(group)] + [[d] for d in range(group[-1] + 1, rank)]

