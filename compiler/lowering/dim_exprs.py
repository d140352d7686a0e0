"""The sizes of a fused body's values as functions of its inputs' sizes.

A ``tsr.fused`` over dynamic dims computes values whose ``?`` sizes are only
known at run time. Each is an affine function of one input's size (what the
body's ops do to sizes: broadcasting keeps them, a pad adds, a nearest
upsample multiplies, a polyphase interleave multiplies what its phases hold),
so the kernel reads it from the input's memref (``memref.dim``) and the host
allocates the results from the input tensors:

    %p = tsr.pad %x, %zero {low = [0, 0, 1], high = [0, 0, 1]}   // x: tensor<1x8x?xf32>
    dim_expr(%p, 2) == DimSource(operand=0, dim=2, mul=1, add=2)   // size(x, 2) + 2

A strided slice floor-divides (``(size(x, 2) + 1) // 2`` for ``x[..., ::2]``).
A dynamic dim no such function gives (a concat along it, a reshape through it,
a multiple of a quotient) is a :class:`LoweringError`: ``fuse-kernels`` leaves such ops on the host
(``dim_sources.sized_at_run_time``), so this arises only from hand-written IR.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, i64
from xdsl.ir import Block, BlockArgument, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.dim_sources import DimSource, dim_source
from tessera.dialects.tsr.shapes import DYNAMIC, shape_of

from .kernel_builder import LoweringError

DimExpr = int | DimSource
"""A body value's size: a number, or ``(size(operand #operand of the fused op, dim) * mul + add) // div``."""


def dim_expr(v: SSAValue, d: int, body: Block) -> DimExpr:
    """Dim ``d`` of body value ``v`` (``body``: the fused op's block), following
    each op's :func:`~tessera.dialects.tsr.dim_sources.dim_source` back to an input."""
    n = shape_of(v.type)[d]
    if n != DYNAMIC:
        return n
    if isinstance(v, BlockArgument):
        if v.owner is not body:
            raise LoweringError("a dynamic dim of a nested block cannot be sized")
        return DimSource(v.index, d)  # the block's arguments are the fused op's operands
    src = dim_source(v.owner, d)
    size = None if src is None or isinstance(src, int) else src.applied_to(
        dim_expr(v.owner.operands[src.operand], src.dim, body))
    if size is None:
        raise LoweringError(f"a dynamic dim of '{v.owner.name}' is not lowered to a kernel (its size is no affine "
                            "function of an input's)")
    return size


def result_dims(op: tsr.FusedOp) -> list[list[DimExpr]]:
    """The sizes of each result of ``op`` as functions of its inputs' sizes."""
    body = op.body.block
    return [[dim_expr(v, d, body) for d in range(len(shape_of(v.type)))] for v in op.yield_op.values]


RESULT_DIMS = "tsr.result_dims"
"""The attribute of a ``tsr.launch`` with dynamic results giving their sizes
from the inputs' (what the host allocates): per result, five numbers per dim,
``(input, dim, mul, add, div)``, with input ``-1`` for a static size ``add``:

    %y = tsr.launch @fused_0(%x) {tsr.result_dims = [array<i64: 0, 0, 1, 0, 1, -1, 0, 0, 8, 1>]}
         : (tensor<?x8xf32>) -> tensor<?x8xf32>
"""


def encode_result_dims(dims: Sequence[Sequence[DimExpr]]) -> ArrayAttr:
    return ArrayAttr([DenseArrayBase.from_list(i64, [x for e in result for x in plain(e)]) for result in dims])


def plain(e: DimExpr) -> tuple[int, int, int, int, int]:
    """A size as ``(input, dim, mul, add, div)``, input ``-1`` for the number ``add``
    (what the host's ``SizedLayout`` evaluates)."""
    return (-1, 0, 0, e, 1) if isinstance(e, int) else (e.operand, e.dim, e.mul, e.add, e.div)


def decode_result_dims(attr: ArrayAttr) -> list[tuple[tuple[int, int, int, int, int], ...]]:
    """Each result's sizes of a ``tsr.result_dims`` attribute, as :func:`plain` numbers."""
    out = []
    for arr in attr.data:
        flat = [int(x) for x in arr.get_values()]
        out.append(tuple(tuple(flat[k:k + 5]) for k in range(0, len(flat), 5)))
    return out
