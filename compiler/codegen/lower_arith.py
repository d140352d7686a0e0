"""``arith`` ops as LLVM instructions.

    %s = arith.addf %a, %b fastmath<reassoc> : f32   ->   %s = fadd reassoc float %a, %b
    %i = arith.index_cast %x : i32 to index          ->   %i = sext i32 %x to i64
    %m = arith.maximumf %a, %b : f32                 ->   call float @llvm.maximum.f32(...)

Each lowering takes the emitter, the op and its operands as LLVM values and
returns the op's results. Float arithmetic on f16/bf16 is done in f32 and
rounded once, which gives the correctly rounded 16-bit result (what LLVM's own
type promotion does) without the library calls LLVM would emit for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.intrinsics import call_intrinsic
from tessera.compiler.codegen.types import BF16, F16, F32, I1, llvm_type

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter

Lowering = Callable[["KernelEmitter", Operation, list[ir.Value]], list[ir.Value]]

CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
_CMP_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def fastmath_flags(op: Operation) -> list[str]:
    attr = op.properties.get("fastmath")
    if attr is None:
        return []
    return sorted(str(flag) for flag in attr.data if str(flag) != "none")  # StrEnum members or plain strings


def float_binop(em: KernelEmitter, build: Callable[[ir.Value, ir.Value], ir.Value], x: ir.Value, y: ir.Value) -> ir.Value:
    """``build(x, y)``, computed in f32 for 16-bit floats."""
    if x.type in (F16, BF16):
        t = x.type
        return em.convert(build(em.convert(x, F32), em.convert(y, F32)), t)
    return build(x, y)


def _float(method: str) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        flags = fastmath_flags(op)
        return [float_binop(em, lambda x, y: getattr(em.b, method)(x, y, flags=flags), a[0], a[1])]

    return lower


def _int(method: str) -> Lowering:
    return lambda em, op, a: [getattr(em.b, method)(a[0], a[1])]


def _intrinsic2(name: str) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        def call(x: ir.Value, y: ir.Value) -> ir.Value:
            return call_intrinsic(em.b, name, [x, y], fastmath_flags(op))

        return [float_binop(em, call, a[0], a[1])]

    return lower


def _int_select(signed: bool, cmp: str) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        icmp = em.b.icmp_signed if signed else em.b.icmp_unsigned
        return [em.b.select(icmp(cmp, a[0], a[1]), a[0], a[1])]

    return lower


def _constant(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    value = op.properties["value"]
    t = llvm_type(op.results[0].type)
    if isinstance(value, IntegerAttr):
        v = value.value.data
        return [ir.Constant(t, v & 1 if t == I1 else v)]
    if isinstance(value, FloatAttr):
        return [ir.Constant(t, float(value.value.data))]
    raise CodegenError(f"arith.constant of {value} is not supported (only scalar constants)")


def _cmpf(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    pred = CMPF[op.predicate.value.data]
    x, y = a
    if x.type in (F16, BF16):
        x, y = em.convert(x, F32), em.convert(y, F32)
    if pred in ("false", "true"):
        return [ir.Constant(I1, int(pred == "true"))]
    if pred in ("ord", "uno"):
        return [em.b.fcmp_ordered(pred, x, y) if pred == "ord" else em.b.fcmp_unordered(pred, x, y)]
    sym = _CMP_SYMBOL[pred[1:]]
    return [em.b.fcmp_ordered(sym, x, y) if pred[0] == "o" else em.b.fcmp_unordered(sym, x, y)]


def _cmpi(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    pred = CMPI[op.predicate.value.data]
    if pred in ("eq", "ne"):
        return [em.b.icmp_signed(_CMP_SYMBOL[pred], a[0], a[1])]
    cmp = em.b.icmp_signed if pred[0] == "s" else em.b.icmp_unsigned
    return [cmp(_CMP_SYMBOL[pred[1:]], a[0], a[1])]


def _floordivsi(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    b = em.b
    q, r = b.sdiv(a[0], a[1]), b.srem(a[0], a[1])
    zero = ir.Constant(a[0].type, 0)
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", a[1], zero)))
    return [b.sub(q, b.zext(adjust, q.type))]


def _ceildivsi(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    b = em.b
    q, r = b.sdiv(a[0], a[1]), b.srem(a[0], a[1])
    zero = ir.Constant(a[0].type, 0)
    same_sign = b.icmp_signed("==", b.icmp_signed("<", r, zero), b.icmp_signed("<", a[1], zero))
    adjust = b.and_(b.icmp_signed("!=", r, zero), same_sign)
    return [b.add(q, b.zext(adjust, q.type))]


def _result_type(op: Operation) -> ir.Type:
    return llvm_type(op.results[0].type)


def _int_resize(signed: bool) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        src, to = a[0].type, _result_type(op)
        if src.width == to.width:
            return [a[0]]
        if src.width > to.width:
            return [em.b.trunc(a[0], to)]
        return [em.b.sext(a[0], to) if signed else em.b.zext(a[0], to)]

    return lower


def _to_float(signed: bool) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        to = _result_type(op)
        via = F32 if to in (F16, BF16) else to
        v = em.b.sitofp(a[0], via) if signed else em.b.uitofp(a[0], via)
        return [em.convert(v, to)]

    return lower


def _from_float(signed: bool) -> Lowering:
    def lower(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
        x = em.convert(a[0], F32) if a[0].type in (F16, BF16) else a[0]
        to = _result_type(op)
        return [em.b.fptosi(x, to) if signed else em.b.fptoui(x, to)]

    return lower


def _bitcast(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [em.b.bitcast(a[0], _result_type(op))]


def _negf(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [em.b.fneg(a[0], flags=fastmath_flags(op))]


def _extf_truncf(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [em.convert(a[0], _result_type(op))]


def _select(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    return [em.b.select(a[0], a[1], a[2])]


LOWERINGS: dict[str, Lowering] = {
    "arith.constant": _constant,
    "arith.addf": _float("fadd"),
    "arith.subf": _float("fsub"),
    "arith.mulf": _float("fmul"),
    "arith.divf": _float("fdiv"),
    "arith.negf": _negf,
    "arith.maximumf": _intrinsic2("llvm.maximum"),
    "arith.minimumf": _intrinsic2("llvm.minimum"),
    "arith.maxnumf": _intrinsic2("llvm.maxnum"),
    "arith.minnumf": _intrinsic2("llvm.minnum"),
    "arith.addi": _int("add"),
    "arith.subi": _int("sub"),
    "arith.muli": _int("mul"),
    "arith.divsi": _int("sdiv"),
    "arith.divui": _int("udiv"),
    "arith.remsi": _int("srem"),
    "arith.remui": _int("urem"),
    "arith.floordivsi": _floordivsi,
    "arith.ceildivsi": _ceildivsi,
    "arith.andi": _int("and_"),
    "arith.ori": _int("or_"),
    "arith.xori": _int("xor"),
    "arith.shli": _int("shl"),
    "arith.shrsi": _int("ashr"),
    "arith.shrui": _int("lshr"),
    "arith.maxsi": _int_select(True, ">"),
    "arith.minsi": _int_select(True, "<"),
    "arith.maxui": _int_select(False, ">"),
    "arith.minui": _int_select(False, "<"),
    "arith.cmpf": _cmpf,
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.extf": _extf_truncf,
    "arith.truncf": _extf_truncf,
    "arith.extsi": _int_resize(True),
    "arith.extui": _int_resize(False),
    "arith.trunci": _int_resize(True),
    "arith.index_cast": _int_resize(True),
    "arith.sitofp": _to_float(True),
    "arith.uitofp": _to_float(False),
    "arith.fptosi": _from_float(True),
    "arith.fptoui": _from_float(False),
    "arith.bitcast": _bitcast,
}
