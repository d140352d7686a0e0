"""``cast-constants``: gives each scalar ``tsr.constant`` the dtype of the value it meets.

A Python number in a model is imported untyped (``f64``, ``i64`` or ``i1``);
this pass puts a typed copy right before each user and rewires the user to it:

    %c = tsr.constant 1.000000e+00 : f64
    %y = tsr.add %x, %c : (tensor<8xbf16>, f64) -> tensor<8xbf16>
    // becomes
    %c = tsr.constant 1.000000e+00 : bf16
    %y = tsr.add %x, %c : (tensor<8xbf16>, bf16) -> tensor<8xbf16>

The dtype a constant meets is the result's element type for the elementwise
binaries and ``tsr.where``'s values, the input's for ``tsr.pad``'s fill, and
for ``tsr.cmp`` the other operand's: a float literal compared with an integer
tensor becomes ``f32`` (torch compares them in the default float dtype), and
comparisons with a bool tensor are left alone.
Values are rounded to the new type as torch rounds them; a value that the
type cannot hold exactly as an integer (``0.5`` meeting ``i32``, ``300``
meeting ``i8``) is left as it is, since retyping it would change the result.

One copy is made per (constant, dtype) and block, before the first user in
that block; an original left without uses is erased.

Option ``policy``: ``native`` (default) or ``f32-compute``, for targets that
compute half-precision ops in f32: the constants of ops whose result is
``bf16``/``f16`` become ``f32`` (``tsr.cmp``, whose result is ``i1``, keeps
the native rule: torch compares in the tensor's dtype).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, Signedness, TensorType, bf16, f16, f32, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.shapes import elem_of

POLICIES = ("native", "f32-compute")


def _scalar_constant(v: SSAValue) -> tsr.ConstantOp | None:
    op = v.owner
    if isinstance(op, tsr.ConstantOp) and not isinstance(v.type, TensorType):
        return op
    return None


def target_type(user: Operation, index: int, policy: str = "native") -> Attribute | None:
    """The type a scalar in operand ``index`` of ``user`` should have; None: no rule."""
    if isinstance(user, tsr.CmpOp):
        other = user.operands[1 - index].type
        if not isinstance(other, TensorType):
            return None
        t, lit = elem_of(other), user.operands[index].type
        if not dtypes.is_float(t) and dtypes.is_float(lit):
            return f32
        return None if dtypes.is_bool(t) else t
    if isinstance(user, tsr.BINARY_OPS) or (isinstance(user, tsr.WhereOp) and index > 0):
        t = elem_of(user.results[0].type)
    elif isinstance(user, tsr.PadOp) and index == 1:
        t = elem_of(user.input.type)
    else:
        return None
    return f32 if policy == "f32-compute" and t in (bf16, f16) else t


def converted(attr: FloatAttr | IntegerAttr, to: Attribute) -> FloatAttr | IntegerAttr | None:
    """``attr``'s value as a ``to`` constant (floats rounded as torch rounds
    them); None when ``to`` is an integer type that cannot hold it exactly."""
    v = bool(attr.value.data) if attr.type == i1 else attr.value.data  # xDSL stores i1 true as -1
    if dtypes.is_float(to):
        import torch  # only here: IR tools start without torch

        return FloatAttr(torch.tensor(float(v), dtype=dtypes.to_torch(to)).item(), to)
    if isinstance(v, float) and not v.is_integer():
        return None
    v, width = int(v), to.width.data
    unsigned = to.signedness.data == Signedness.UNSIGNED or to == i1
    lo, hi = (0, 2**width) if unsigned else (-(2 ** (width - 1)), 2 ** (width - 1))
    return IntegerAttr(v, to) if lo <= v < hi else None


def _retyped(user: Operation, index: int, policy: str) -> FloatAttr | IntegerAttr | None:
    """The constant operand ``index`` of ``user`` should be, when it is a scalar constant of another type."""
    const = _scalar_constant(user.operands[index])
    to = target_type(user, index, policy) if const is not None else None
    if to is None or to == const.result.type:
        return None
    return converted(const.value, to)


def mixed_constant_uses(module: Operation, policy: str = "native") -> list[Operation]:
    """Ops that use a scalar constant of another type than the one they meet:
    a float literal of one width on float tensors of another, and also an
    integer or bool literal on float tensors and the like. These are the ops
    ``cast-constants{policy}`` changes, so the list is empty after it."""
    return [op for op in module.walk() if any(_retyped(op, i, policy) is not None for i in range(len(op.operands)))]


@dataclass(frozen=True)
class CastConstants(ModulePass):
    name = "cast-constants"

    policy: str = "native"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got '{self.policy}'")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        copies: dict[tuple[object, SSAValue, Attribute], SSAValue] = {}
        originals: list[tsr.ConstantOp] = []
        for user in list(op.walk()):
            for i, v in enumerate(user.operands):
                new = _retyped(user, i, self.policy)
                if new is None:
                    continue
                key = (user.parent_block(), v, new.type)
                if key not in copies:
                    copy = tsr.ConstantOp(new)
                    copy.result.name_hint = v.name_hint
                    Rewriter.insert_op(copy, InsertPoint.before(user))
                    copies[key] = copy.result
                    originals.append(v.owner)
                user.operands[i] = copies[key]
        for const in dict.fromkeys(originals):
            if not const.result.uses:
                Rewriter.erase_op(const)
