"""The sizes of a fused body's values as functions of its inputs' sizes.

A ``tsr.fused`` over dynamic dims computes values whose ``?`` sizes are only
known at run time. Each is an affine function of one input's size (what the
body's ops do to sizes: broadcasting keeps them, a pad adds, a nearest
upsample multiplies, a polyphase interleave multiplies what its phases hold),
so the kernel reads it from the input's memref (``memref.dim``) and the host
allocates the results from the input tensors:

    %p = tsr.pad %x, %zero {low = [0, 0, 1], high = [0, 0, 1]}   // x: tensor<1x8x?xf32>
    dim_expr(%p, 2) == Affine(input=0, dim=2, mul=1, add=2)       // size(x, 2) + 2

A dynamic dim no such function gives (a concat along it, a reshape through it)
is a :class:`LoweringError`: the graph is then compiled per size class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, TensorType, i64
from xdsl.ir import Block, BlockArgument, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.ops_nn import REDUCTION_OPS
from tessera.dialects.tsr.shapes import DYNAMIC, ints, shape_of

from .kernel_builder import LoweringError


@dataclass(frozen=True)
class Affine:
    """``size(input #input, dim) * mul + add``."""

    input: int
    dim: int
    mul: int = 1
    add: int = 0

    def scaled(self, k: int) -> Affine:
        return Affine(self.input, self.dim, self.mul * k, self.add * k)

    def shifted(self, k: int) -> Affine:
        return Affine(self.input, self.dim, self.mul, self.add + k)


DimExpr = int | Affine


def dim_expr(v: SSAValue, d: int, body: Block) -> DimExpr:
    """Dim ``d`` of body value ``v`` (``body``: the fused op's block)."""
    n = shape_of(v.type)[d]
    if n != DYNAMIC:
        return n
    if isinstance(v, BlockArgument):
        if v.owner is not body:
            raise LoweringError("a dynamic dim of a nested block cannot be sized")
        return Affine(v.index, d)
    op = v.owner
    rank = len(shape_of(v.type))
    if isinstance(op, (*ELEMENTWISE_OPS, tsr.ExpandOp)):
        for x in op.operands:
            if isinstance(x.type, TensorType):
                lead = rank - len(shape_of(x.type))
                if d >= lead and shape_of(x.type)[d - lead] == DYNAMIC:
                    return dim_expr(x, d - lead, body)
    elif isinstance(op, (tsr.ConvertOp, tsr.RelayoutOp)):
        return dim_expr(op.input, d, body)
    elif isinstance(op, tsr.PermuteOp):
        return dim_expr(op.input, ints(op.dims)[d], body)
    elif isinstance(op, tsr.PadOp):
        return _add(dim_expr(op.input, d, body), ints(op.low)[d] + ints(op.high)[d])
    elif isinstance(op, tsr.SliceOp) and op.dim.value.data % rank != d:
        return dim_expr(op.input, d, body)
    elif isinstance(op, tsr.ConcatOp) and op.dim.value.data % rank != d:
        return dim_expr(op.inputs[0], d, body)
    elif isinstance(op, tsr.UpsampleOp) and op.mode.data == "nearest":
        if d < 2:
            return dim_expr(op.input, d, body)
        scale = list(op.scales.get_values())[d - 2] if op.scales is not None else None
        if scale is not None and float(scale).is_integer():
            return _mul(dim_expr(op.input, d, body), int(scale))
    elif isinstance(op, tsr.PolyphaseInterleaveOp) and d != 1:
        if d == 0:
            return dim_expr(op.input, 0, body)
        scale, shifts = ints(op.scales)[d - 2], op.dim_shifts()[d - 2]
        return _mul(_add(dim_expr(op.input, d, body), -max(shifts)), scale)  # the fold's conv_size(n) = n + shift
    elif isinstance(op, REDUCTION_OPS):
        kept = [k for k in range(len(shape_of(op.input.type)))
                if op.keepdim.value.data or k not in op.reduced_dims()]
        return dim_expr(op.input, kept[d], body)
    raise LoweringError(f"a dynamic dim of '{op.name}' is not lowered to a kernel (its size is no affine function "
                        "of an input's)")


def _add(e: DimExpr, k: int) -> DimExpr:
    return e + k if isinstance(e, int) else e.shifted(k)


def _mul(e: DimExpr, k: int) -> DimExpr:
    return e * k if isinstance(e, int) else e.scaled(k)


def result_dims(op: tsr.FusedOp) -> list[list[DimExpr]]:
    """The sizes of each result of ``op`` as functions of its inputs' sizes."""
    body = op.body.block
    return [[dim_expr(v, d, body) for d in range(len(shape_of(v.type)))] for v in op.yield_op.values]


RESULT_DIMS = "tsr.result_dims"
"""The attribute of a ``tsr.launch`` with dynamic results giving their sizes
from the inputs' (what the host allocates): per result, four numbers per dim,
``(input, dim, mul, add)``, with input ``-1`` for a static size ``add``:

    %y = tsr.launch @fused_0(%x) {tsr.result_dims = [array<i64: 0, 0, 1, 0, -1, 0, 0, 8>]}
         : (tensor<?x8xf32>) -> tensor<?x8xf32>
"""


def encode_result_dims(dims: Sequence[Sequence[DimExpr]]) -> ArrayAttr:
    return ArrayAttr([DenseArrayBase.from_list(i64, [x for e in result for x in plain(e)]) for result in dims])


def plain(e: DimExpr) -> tuple[int, int, int, int]:
    """A size as ``(input, dim, mul, add)``, input ``-1`` for the number ``add``
    (what the host's ``SizedEmpty`` evaluates)."""
    return (-1, 0, 0, e) if isinstance(e, int) else (e.input, e.dim, e.mul, e.add)


def decode_result_dims(attr: ArrayAttr) -> list[tuple[tuple[int, int, int, int], ...]]:
    """Each result's sizes of a ``tsr.result_dims`` attribute, as :func:`plain` numbers."""
    out = []
    for arr in attr.data:
        flat = [int(x) for x in arr.get_values()]
        out.append(tuple((flat[k], flat[k + 1], flat[k + 2], flat[k + 3]) for k in range(0, len(flat), 4)))
    return out
