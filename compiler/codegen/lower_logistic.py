"""The logistic forms of the kernel IR (SiLU, sigmoid) as one expansion each.

The kernel IR spells them as ``lowering/scalar_ops.py`` builds them:

    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32      // %one = arith.constant 1.0 : f32
    %s = arith.divf %x, %d : f32        // silu(x); sigmoid(x) divides %one

The ``arith.divf`` of that shape becomes ``expand_math.silu`` (or ``sigmoid``) of
``%x``: its denominator takes 19 vector ops where the general ``exp`` and the
add take 29 (no NaN select inside, ``2^n`` one factor from the rounding sum's
bits). The ``exp`` and ``addf`` emitted before it are then dead unless something
else reads them, and LLVM deletes them. Any other ``divf`` is a plain ``fdiv``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects import arith, math
from xdsl.ir import Operation, SSAValue

from tessera.compiler.codegen import expand_math
from tessera.compiler.codegen.lower_arith import LOWERINGS as ARITH
from tessera.compiler.codegen.lower_arith import Lowering
from tessera.compiler.codegen.lower_math import constant_float, in_f32
from tessera.compiler.codegen.types import F64

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter

Expansion = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def logistic_of(op: Operation) -> tuple[Expansion, SSAValue] | None:
    """``(expand_math.silu, %x)`` for ``divf(%x, 1 + exp(-%x))``, ``(expand_math.sigmoid,
    %x)`` for ``divf(1, 1 + exp(-%x))``; None for any other division."""
    numerator, denominator = op.operands
    add = denominator.owner
    if not isinstance(add, arith.AddfOp):
        return None
    for one, e in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        exp = e.owner
        if constant_float(one) != 1.0 or not isinstance(exp, math.ExpOp) or not isinstance(exp.operand.owner, arith.NegfOp):
            continue
        x = exp.operand.owner.operand
        if numerator == x:
            return expand_math.silu, x
        if constant_float(numerator) == 1.0:
            return expand_math.sigmoid, x
    return None


def _divf(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    form = logistic_of(op)
    if form is None or a[0].type == F64:
        return ARITH["arith.divf"](em, op, a)
    expand, x = form
    return [in_f32(em, [em.values[x]], lambda v: expand(em.b, v[0]))]


LOWERINGS: dict[str, Lowering] = {"arith.divf": _divf}
