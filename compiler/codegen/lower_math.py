"""``math`` ops as LLVM IR.

    %e = math.exp %x : f32    ->  inline polynomial (expand_math.exp), vectorizable
    %s = math.sqrt %x : f32   ->  call float @llvm.sqrt.f32(float %x)
    %e = math.exp %x : f64    ->  call double @exp(double %x)   (libm)
    %p = math.powf %x, %c2 : f32 with %c2 = arith.constant 2.0  ->  fmul %x, %x

f16/bf16 operands are computed in f32 and rounded once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Operation, SSAValue

from tessera.compiler.codegen import expand_math
from tessera.compiler.codegen.intrinsics import call_intrinsic
from tessera.compiler.codegen.lower_arith import Lowering, fastmath_flags
from tessera.compiler.codegen.types import BF16, F16, F32, F64, I1

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter

Expansion = Callable[[ir.IRBuilder, ir.Value], ir.Value]


def _libm(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(F64, [F64] * len(args)), name=name)
        fn.attributes.add("nounwind")
    return b.call(fn, args)


def in_f32(em: KernelEmitter, args: list[ir.Value], compute: Callable[[list[ir.Value]], ir.Value]) -> ir.Value:
    t = args[0].type
    if t in (F16, BF16):
        return em.convert(compute([em.convert(a, F32) for a in args]), t)
    return compute(args)


def _transcendental(expand: Expansion, libm_name: str) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        if a[0].type == F64:
            return [_libm(em.b, libm_name, a)]
        return [in_f32(em, a, lambda v: expand(em.b, v[0]))]

    return lower


def _intrinsic(name: str) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        flags = fastmath_flags(op)
        return [in_f32(em, a, lambda v: call_intrinsic(em.b, name, v, flags))]

    return lower


def _rsqrt(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    def compute(v: list[ir.Value]) -> ir.Value:
        root = call_intrinsic(em.b, "llvm.sqrt", v)
        return em.b.fdiv(ir.Constant(v[0].type, 1.0), root)

    return [in_f32(em, a, compute)]


def constant_float(v: SSAValue) -> float | None:
    """The value of a float ``arith.constant``, or of one broadcast to every lane
    (``vector.broadcast %one : f32 to vector<8xf32>``); None for anything else."""
    owner = v.owner
    if isinstance(owner, vector.BroadcastOp):
        return constant_float(owner.source)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return float(owner.value.value.data)
    return None


def _powf(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    b = em.b
    exponent = constant_float(op.operands[1])

    def compute(v: list[ir.Value]) -> ir.Value:
        x, t = v[0], v[0].type
        sqrt = lambda y: call_intrinsic(b, "llvm.sqrt", [y])  # noqa: E731
        one = expand_math.like(x, 1.0)
        special = {
            1.0: lambda: x,
            2.0: lambda: b.fmul(x, x),
            3.0: lambda: b.fmul(b.fmul(x, x), x),
            0.5: lambda: sqrt(x),
            -1.0: lambda: b.fdiv(one, x),
            -0.5: lambda: b.fdiv(one, sqrt(x)),
            -2.0: lambda: b.fdiv(one, b.fmul(x, x)),
        }
        if exponent in special:
            return special[exponent]()
        if t == F64:
            return _libm(b, "pow", v)
        return expand_math.powf(b, x, v[1])

    return [in_f32(em, a, compute)]


def _fma(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [in_f32(em, a, lambda v: call_intrinsic(em.b, "llvm.fma", v))]


def _absi(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [call_intrinsic(em.b, "llvm.abs", [a[0], ir.Constant(I1, 0)])]


def _copysign(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [in_f32(em, a, lambda v: call_intrinsic(em.b, "llvm.copysign", v))]


LOWERINGS: dict[str, Lowering] = {
    "math.exp": _transcendental(expand_math.exp, "exp"),
    "math.log": _transcendental(expand_math.log, "log"),
    "math.tanh": _transcendental(expand_math.tanh, "tanh"),
    "math.erf": _transcendental(expand_math.erf, "erf"),
    "math.powf": _powf,
    "math.sqrt": _intrinsic("llvm.sqrt"),
    "math.rsqrt": _rsqrt,
    "math.absf": _intrinsic("llvm.fabs"),
    "math.floor": _intrinsic("llvm.floor"),
    "math.ceil": _intrinsic("llvm.ceil"),
    "math.trunc": _intrinsic("llvm.trunc"),
    "math.roundeven": _intrinsic("llvm.roundeven"),
    "math.copysign": _copysign,
    "math.fma": _fma,
    "math.absi": _absi,
}
