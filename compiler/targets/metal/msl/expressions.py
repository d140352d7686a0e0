"""``arith`` and ``math`` ops as MSL expressions, one table entry per op.

    %s = arith.addf %a, %b : half     ->  a + b
    %s = arith.addf %a, %b : bf16     ->  static_cast<bfloat>(static_cast<float>(a) + static_cast<float>(b))
    %e = math.exp %x : f32            ->  metal::precise::exp(x)
    %e = math.exp %x : f16            ->  static_cast<half>(metal::precise::exp(static_cast<float>(x)))
    %m = arith.maximumf %a, %b : f32  ->  tsr_maximum(a, b)            (prelude.py: NaN semantics of MLIR)

Each entry takes the printer context, the op and its operands' names and
returns the expression of its (single) result; every conversion is an
explicit ``static_cast``. Choices:

* ``half`` arithmetic, comparisons and exact functions (abs, floor, fma, ...) are
  native: Apple GPUs compute them in half at full rate, and an IEEE half op is
  correctly rounded.
* ``bfloat`` computes through ``float`` (exact widening, one rounding back), which
  is correctly rounded for + - * / and sqrt and needs no bfloat operator or math
  overload (MSL 3.1 has few; Inductor's MPS backend does the same).
* Transcendentals use ``metal::precise::`` on ``float`` for every type: their
  accuracy then does not depend on the fast-math setting the library is built
  with, and half/bfloat results are the float result rounded once.
* ``fastmath`` flags are ignored (``metal::precise`` everywhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.lower_arith import CMPF, CMPI
from tessera.compiler.codegen.lower_math import constant_float
from tessera.compiler.targets.metal.msl.types import BOOL, FLOAT, HALF, INT, LONG, MslType


class Context(Protocol):
    def type(self, value: SSAValue) -> MslType: ...

    def use(self, helper: str) -> None: ...


Printer = Callable[[Context, Operation, list[str]], str]


def cast(t: MslType | str, x: str) -> str:
    return f"static_cast<{t}>({x})"


def to_float(x: str, t: MslType) -> str:
    return x if t is FLOAT else cast(FLOAT, x)


def _result(ctx: Context, op: Operation) -> MslType:
    return ctx.type(op.results[0])


def _floating(compute: Callable[[Sequence[str]], str], half_native: bool = True) -> Printer:
    """``compute(operands)`` in the result type, or through float (bfloat always;
    half unless ``half_native``), with one explicit cast back."""

    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        t = _result(ctx, op)
        if t is FLOAT or (t is HALF and half_native):
            return compute(a)
        return cast(t, compute([to_float(x, ctx.type(v)) for x, v in zip(a, op.operands)]))

    return emit


def _binary(symbol: str) -> Printer:
    return _floating(lambda a: f"{a[0]} {symbol} {a[1]}")


def _helper(name: str) -> Printer:
    call = _floating(lambda a: f"{name}({', '.join(a)})")

    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        ctx.use(name)
        return call(ctx, op, a)

    return emit


def _precise(fn: str) -> Printer:
    return _floating(lambda a: f"metal::precise::{fn}({', '.join(a)})", half_native=False)


def _exact(fn: str) -> Printer:
    """A function that is exact (abs, floor, copysign...): native for half."""
    return _floating(lambda a: f"metal::{fn}({', '.join(a)})")


def _erf(ctx: Context, op: Operation, a: list[str]) -> str:
    ctx.use("tsr_erf")
    return _floating(lambda v: f"tsr_erf({v[0]})", half_native=False)(ctx, op, a)


def _pow(x: Sequence[str]) -> str:
    return f"metal::precise::pow({x[0]}, {x[1]})"


def _powf(ctx: Context, op: Operation, a: list[str]) -> str:
    special: dict[float, Callable[[Sequence[str]], str]] = {
        1.0: lambda x: x[0],
        2.0: lambda x: f"{x[0]} * {x[0]}",
        3.0: lambda x: f"{x[0]} * {x[0]} * {x[0]}",
        0.5: lambda x: f"metal::precise::sqrt({x[0]})",
        -0.5: lambda x: f"metal::precise::rsqrt({x[0]})",
        -1.0: lambda x: f"1.0f / {x[0]}",
    }
    exponent = constant_float(op.operands[1])
    compute = special.get(exponent, _pow) if exponent is not None else _pow
    return _floating(compute, half_native=False)(ctx, op, a)


# -- comparisons ----------------------------------------------------------------------------------
_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NEGATED = {"eq": "!=", "ne": "==", "lt": ">=", "le": ">", "gt": "<=", "ge": "<"}


def _predicate(op: Operation) -> int:
    """The ``predicate`` of an ``arith.cmpf``/``arith.cmpi``."""
    attr = op.properties.get("predicate")
    if not isinstance(attr, IntegerAttr):
        raise CodegenError(f"'{op.name}' has no integer predicate")
    return attr.value.data


def _cmpf(ctx: Context, op: Operation, a: list[str]) -> str:
    pred = CMPF[_predicate(op)]
    t = ctx.type(op.operands[0])
    x, y = (to_float(v, t) for v in a) if t.via_float else a
    if pred in ("false", "true"):
        return pred
    if pred == "ord":
        return f"({x} == {x} && {y} == {y})"
    if pred == "uno":
        return f"({x} != {x} || {y} != {y})"
    if pred == "one":
        return f"({x} < {y} || {x} > {y})"
    if pred == "ueq":
        return f"!({x} < {y} || {x} > {y})"
    if pred == "une":
        return f"{x} != {y}"
    if pred[0] == "o":  # C's <, <=, >, >=, == are false on NaN: ordered
        return f"{x} {_SYMBOL[pred[1:]]} {y}"
    return f"!({x} {_NEGATED[pred[1:]]} {y})"  # unordered: true on NaN


def _unsigned(x: str, t: MslType) -> str:
    return x if t is BOOL else cast(t.unsigned, x)


def _cmpi(ctx: Context, op: Operation, a: list[str]) -> str:
    pred = CMPI[_predicate(op)]
    t = ctx.type(op.operands[0])
    if pred in ("eq", "ne"):
        return f"{a[0]} {_SYMBOL[pred]} {a[1]}"
    x, y = (a if pred[0] == "s" else [_unsigned(v, t) for v in a])
    return f"{x} {_SYMBOL[pred[1:]]} {y}"


# -- integers -------------------------------------------------------------------------------------
def _narrow(t: MslType, expr: str) -> str:
    """C promotes char/short operands to int: cast the result back."""
    return expr if t in (INT, LONG) else cast(t, expr)


def _int(symbol: str, on_bool: str | None = None) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        t = _result(ctx, op)
        if t is BOOL:
            return f"{a[0]} {on_bool or symbol} {a[1]}"
        return _narrow(t, f"{a[0]} {symbol} {a[1]}")

    return emit


def _uint(symbol: str) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        t = _result(ctx, op)
        if t is BOOL:
            return _int(symbol)(ctx, op, a)
        return cast(t, f"{_unsigned(a[0], t)} {symbol} {_unsigned(a[1], t)}")

    return emit


def _int_helper(name: str) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        ctx.use(name)
        return f"{name}({a[0]}, {a[1]})"

    return emit


def _select_int(signed: bool, symbol: str) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        t = _result(ctx, op)
        x, y = a if signed else (_unsigned(v, t) for v in a)
        return f"({x} {symbol} {y}) ? {a[0]} : {a[1]}"

    return emit


def _shr_unsigned(ctx: Context, op: Operation, a: list[str]) -> str:
    t = _result(ctx, op)
    return cast(t, f"{_unsigned(a[0], t)} >> {a[1]}")


# -- conversions ----------------------------------------------------------------------------------
def _float_cast(ctx: Context, op: Operation, a: list[str]) -> str:
    """extf/truncf: half and bfloat convert through float (exact widening)."""
    src, dst = ctx.type(op.operands[0]), _result(ctx, op)
    x = a[0] if src is FLOAT or dst is FLOAT else cast(FLOAT, a[0])
    return cast(dst, x)


def _int_resize(signed: bool) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        src, dst = ctx.type(op.operands[0]), _result(ctx, op)
        if dst is BOOL:
            return f"({a[0]} & 1) != 0"
        if src is BOOL:
            return cast(dst, f"{a[0]} ? -1 : 0") if signed else cast(dst, a[0])
        if src.bits >= dst.bits or signed:  # truncation, or a sign-extending widening
            return cast(dst, a[0])
        return cast(dst, cast(src.unsigned, a[0]))

    return emit


def _to_float(signed: bool) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        src, dst = ctx.type(op.operands[0]), _result(ctx, op)
        if src is BOOL:
            x = f"({a[0]} ? -1 : 0)" if signed else cast(INT, a[0])
        else:
            x = a[0] if signed else cast(src.unsigned, a[0])
        return cast(FLOAT, x) if dst is FLOAT else cast(dst, cast(FLOAT, x))

    return emit


def _from_float(signed: bool) -> Printer:
    def emit(ctx: Context, op: Operation, a: list[str]) -> str:
        src, dst = ctx.type(op.operands[0]), _result(ctx, op)
        x = to_float(a[0], src)
        if dst is BOOL:
            return f"{x} != 0.0f"
        return cast(dst, x) if signed else cast(dst, cast(dst.unsigned, x))

    return emit


def _bitcast(ctx: Context, op: Operation, a: list[str]) -> str:
    return f"as_type<{_result(ctx, op)}>({a[0]})"


def _negf(ctx: Context, op: Operation, a: list[str]) -> str:
    return _floating(lambda v: f"-{v[0]}")(ctx, op, a)


def _select(ctx: Context, op: Operation, a: list[str]) -> str:
    return f"{a[0]} ? {a[1]} : {a[2]}"


EXPRESSIONS: dict[str, Printer] = {
    "arith.addf": _binary("+"),
    "arith.subf": _binary("-"),
    "arith.mulf": _binary("*"),
    "arith.divf": _binary("/"),
    "arith.negf": _negf,
    "arith.maximumf": _helper("tsr_maximum"),
    "arith.minimumf": _helper("tsr_minimum"),
    "arith.maxnumf": _helper("tsr_maxnum"),
    "arith.minnumf": _helper("tsr_minnum"),
    "arith.addi": _int("+", on_bool="!="),
    "arith.subi": _int("-", on_bool="!="),
    "arith.muli": _int("*", on_bool="&&"),
    "arith.divsi": _int("/"),
    "arith.divui": _uint("/"),
    "arith.remsi": _int("%"),
    "arith.remui": _uint("%"),
    "arith.floordivsi": _int_helper("tsr_floordiv"),
    "arith.ceildivsi": _int_helper("tsr_ceildiv"),
    "arith.andi": _int("&", on_bool="&&"),
    "arith.ori": _int("|", on_bool="||"),
    "arith.xori": _int("^", on_bool="!="),
    "arith.shli": _int("<<"),
    "arith.shrsi": _int(">>"),
    "arith.shrui": _shr_unsigned,
    "arith.maxsi": _select_int(True, ">"),
    "arith.minsi": _select_int(True, "<"),
    "arith.maxui": _select_int(False, ">"),
    "arith.minui": _select_int(False, "<"),
    "arith.cmpf": _cmpf,
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.extf": _float_cast,
    "arith.truncf": _float_cast,
    "arith.extsi": _int_resize(True),
    "arith.extui": _int_resize(False),
    "arith.trunci": _int_resize(True),
    "arith.index_cast": _int_resize(True),
    "arith.index_castui": _int_resize(False),
    "arith.sitofp": _to_float(True),
    "arith.uitofp": _to_float(False),
    "arith.fptosi": _from_float(True),
    "arith.fptoui": _from_float(False),
    "arith.bitcast": _bitcast,
    "math.exp": _precise("exp"),
    "math.log": _precise("log"),
    "math.tanh": _precise("tanh"),
    "math.sqrt": _precise("sqrt"),
    "math.rsqrt": _precise("rsqrt"),
    "math.erf": _erf,
    "math.powf": _powf,
    "math.absf": _exact("fabs"),
    "math.floor": _exact("floor"),
    "math.ceil": _exact("ceil"),
    "math.trunc": _exact("trunc"),
    "math.roundeven": _exact("rint"),
    "math.copysign": _exact("copysign"),
    "math.fma": _exact("fma"),
}
