"""``fuse-int-mm-epilogues``: a quantized linear layer's int32 -> float epilogue
becomes part of its GEMM.

    %acc = tsr.int_mm %x, %w : (tensor<32x64xui8>, tensor<64x16xi8>) -> tensor<32x16xi32>
    %f   = tsr.convert %acc : (tensor<32x16xi32>) -> tensor<32x16xf32>
    %r   = tsr.mul %f, %xs : (tensor<32x16xf32>, tensor<32x1xf32>) -> tensor<32x16xf32>
    %c   = tsr.mul %r, %ws : (tensor<32x16xf32>, tensor<1x16xf32>) -> tensor<32x16xf32>
    %y   = tsr.add %c, %b : (tensor<32x16xf32>, tensor<16xf32>) -> tensor<32x16xf32>
    // becomes
    %y = tsr.scaled_int_mm %x, %w, %xs1, %ws1, %b : (...) -> tensor<32x16xf32>

with ``%xs1``/``%ws1`` the scales as 1-D vectors (the reshape that made
``%xs`` a column is read through; otherwise a ``tsr.reshape`` is added). The
GEMM kernel computes ``float(acc) * a_scale[m] * b_scale[n] + bias[n]`` in
this order with a rounding per step, which is eager's, so only this order is
matched: a chain that scales by columns first (a different rounding) stays
as it is. Every intermediate must have this chain as its only user; the
bias (optional) is a float32 ``[N]`` or ``[1, N]``.

Walk order: any; each ``int_mm`` is matched once, and the pattern erases
the ops it absorbs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from tessera.dialects.tsr import AddOp, ConvertOp, IntMmOp, MulOp, ReshapeOp, ScaledIntMmOp
from tessera.dialects.tsr.layout import LayoutAttr, identity
from tessera.dialects.tsr.shapes import elem_of, shape_of


def _only_user(v: SSAValue) -> Operation | None:
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 else None


def _other_operand(op: Operation, v: SSAValue) -> SSAValue | None:
    """The operand of a binary ``op`` that is not ``v`` (None if both are)."""
    a, b = op.operands
    if a is v and b is not v:
        return b
    if b is v and a is not v:
        return a
    return None


def _is_f32_matrix(v: SSAValue, m: int, n: int) -> bool:
    return isinstance(v.type, TensorType) and elem_of(v.type) == f32 and shape_of(v.type) == (m, n)


def _is_vector(v: SSAValue, shapes: tuple[tuple[int, ...], ...]) -> bool:
    return isinstance(v.type, TensorType) and elem_of(v.type) == f32 and shape_of(v.type) in shapes


def _flat(v: SSAValue, size: int, before: Operation, rewriter: PatternRewriter) -> SSAValue:
    """``v`` (a ``[size]``, ``[size, 1]`` or ``[1, size]`` f32 vector) as ``[size]``:
    itself, the input of the reshape that made it, or a new reshape."""
    if shape_of(v.type) == (size,):
        return v
    owner = v.owner
    if isinstance(owner, ReshapeOp) and _is_vector(owner.input, ((size,),)):
        return owner.input
    flat = ReshapeOp.build(operands=[v, []], result_types=[TensorType(f32, [size], LayoutAttr(identity(1)))])
    rewriter.insert(flat, InsertPoint.before(before))  # the chain's operands are defined by then
    return flat.result


@dataclass
class _Match:
    ops: list[Operation]
    a_scale: SSAValue
    b_scale: SSAValue
    bias: SSAValue | None


def _match(mm: IntMmOp) -> _Match | None:
    m, n = shape_of(mm.result.type)
    convert = _only_user(mm.result)
    if not isinstance(convert, ConvertOp) or not _is_f32_matrix(convert.result, m, n):
        return None
    row = _only_user(convert.result)
    if not isinstance(row, MulOp) or not _is_f32_matrix(row.result, m, n):
        return None
    a_scale = _other_operand(row, convert.result)
    if a_scale is None or not _is_vector(a_scale, ((m, 1),)):
        return None
    col = _only_user(row.result)
    if not isinstance(col, MulOp) or not _is_f32_matrix(col.result, m, n):
        return None
    b_scale = _other_operand(col, row.result)
    if b_scale is None or not _is_vector(b_scale, ((n,), (1, n))):
        return None
    ops: list[Operation] = [convert, row, col]
    bias = None
    add = _only_user(col.result)
    if isinstance(add, AddOp) and _is_f32_matrix(add.result, m, n):
        candidate = _other_operand(add, col.result)
        if candidate is not None and _is_vector(candidate, ((n,), (1, n))):
            bias = candidate
            ops.append(add)
    return _Match(ops, a_scale, b_scale, bias)


class FuseScaledIntMm(RewritePattern):
    """``int_mm -> convert f32 -> mul row scale -> mul column scale (-> add bias)``
    -> ``scaled_int_mm``."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, mm: IntMmOp, rewriter: PatternRewriter) -> None:
        found = _match(mm)
        if found is None:
            return
        m, n = shape_of(mm.result.type)
        last = found.ops[-1]
        vectors = [_flat(v, size, last, rewriter)
                   for v, size in ((found.a_scale, m), (found.b_scale, n), (found.bias, n)) if v is not None]
        fused = ScaledIntMmOp.build(operands=[mm.lhs, mm.rhs, vectors[0], vectors[1], vectors[2:]],
                                    result_types=[last.results[0].type])
        rewriter.replace(last, fused)
        for op in reversed(found.ops[:-1]):
            rewriter.erase(op)
        rewriter.erase(mm)


@dataclass(frozen=True)
class FuseIntMmEpilogues(ModulePass):
    name = "fuse-int-mm-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FuseScaledIntMm(), apply_recursively=False).rewrite_module(op)
