"""Scalar arithmetic of kernels: ``tsr`` element types, their compute types,
conversions between them, and each elementwise op as ``arith``/``math`` ops.

Every scalar is held in the *compute type* of its element type: itself, except
``f16``/``bf16`` under the f32-compute policy, which are computed in ``f32``
(loaded and ``arith.extf``'d, ``arith.truncf``'d before a store):

    %h = memref.load %x[%i] : memref<8xbf16>
    %v = arith.extf %h : bf16 to f32
    %c = arith.constant 5.000000e-01 : bf16          // a typed literal ...
    %e = arith.extf %c : bf16 to f32                   // ... used in f32
    %y = arith.mulf %v, %e : f32
    %t = arith.truncf %y : f32 to bf16
    memref.store %t, %out[%i] : memref<8xbf16>

A converted value is rounded to the target element type (``tsr.convert`` to
``bf16`` truncates even when computing in f32); ``gelu``, ``silu`` and
``sigmoid`` are expanded into ``arith`` and ``math``; integer ``max``/``min``/
``abs``/``relu`` use compare and select; ``ui8`` uses unsigned compares and
conversions on its ``i8`` storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    f32,
    i1,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.shapes import elem_of

from .kernel_builder import KernelBuilder, LoweringError, storage_type

_FLOAT_WIDTH = {Float16Type: 16, BFloat16Type: 16, Float32Type: 32, Float64Type: 64}
_CMPF = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_CMPI = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_CMPU = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}
# ATen's pow(x, scalar) special cases (pow_tensor_scalar_optimized).
_POW_SPECIAL = (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0)


def width(t: Attribute) -> int:
    return _FLOAT_WIDTH[type(t)] if dtypes.is_float(t) else t.width.data


def is_unsigned(t: Attribute) -> bool:
    return t == dtypes.ui8 or t == i1


def promote(a: Attribute, a_tensor: bool, b: Attribute, b_tensor: bool) -> Attribute:
    """The element type torch compares ``a`` and ``b`` in (a scalar operand
    takes the tensor's type unless it is of a higher kind)."""
    def kind(t: Attribute) -> int:
        return 2 if dtypes.is_float(t) else 0 if t == i1 else 1

    if a_tensor != b_tensor:
        t, s = (a, b) if a_tensor else (b, a)
        if kind(s) <= kind(t):
            return t
        return f32 if kind(s) == 2 else i64
    if kind(a) != kind(b):
        return a if kind(a) > kind(b) else b
    if a == b:
        return a
    if kind(a) == 2:
        if width(a) == width(b):
            return f32
        return a if width(a) > width(b) else b
    if width(a) == width(b):  # i8 and ui8
        return i16
    return a if width(a) > width(b) else b


@dataclass(frozen=True)
class Numerics:
    """How half-precision values are computed: in ``f32`` (x86, CUDA) or natively (Metal)."""

    half_in_f32: bool = True

    def compute_elem(self, elem: Attribute) -> Attribute:
        """The element type a value of ``elem`` is computed in (signedness kept)."""
        if self.half_in_f32 and isinstance(elem, (Float16Type, BFloat16Type)):
            return f32
        return elem

    def compute(self, elem: Attribute) -> Attribute:
        """The MLIR type of a scalar of ``elem`` in the kernel."""
        return storage_type(self.compute_elem(elem))


class ScalarLowering:
    """Emits the scalar ops of one kernel through a :class:`KernelBuilder`."""

    def __init__(self, kb: KernelBuilder, numerics: Numerics):
        self.kb = kb
        self.num = numerics

    # -- memory and literals -------------------------------------------------------------
    def load(self, ref: SSAValue, idx: Sequence[SSAValue], elem: Attribute) -> SSAValue:
        v = self.kb.load(ref, idx)
        return self._fcast(v, self.num.compute(elem)) if dtypes.is_float(elem) else v

    def store(self, v: SSAValue, ref: SSAValue, idx: Sequence[SSAValue], elem: Attribute) -> None:
        if dtypes.is_float(elem):
            v = self._fcast(v, storage_type(elem))
        self.kb.store(v, ref, idx)

    def literal(self, attr: FloatAttr | IntegerAttr) -> SSAValue:
        """A ``tsr.constant`` scalar: a constant of its own type, in its compute type."""
        t = attr.type
        if isinstance(attr, FloatAttr):
            return self._fcast(self.kb.const(attr.value.data, t), self.num.compute(t))
        return self.kb.const(int(attr.value.data), storage_type(t))

    def float_const(self, x: float, elem: Attribute) -> SSAValue:
        """A float literal of the compute type of ``elem``."""
        return self.kb.const(x, self.num.compute(elem))

    # -- conversions ---------------------------------------------------------------------
    def _fcast(self, v: SSAValue, t: Attribute) -> SSAValue:
        if v.type == t:
            return v
        if width(v.type) == width(t):  # bf16 <-> f16
            v = self.kb.value(arith.ExtFOp(v, f32))
        if width(v.type) < width(t):
            return self.kb.value(arith.ExtFOp(v, t))
        return self.kb.value(arith.TruncFOp(v, t)) if v.type != t else v

    def convert(self, v: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
        """``v`` (a value of ``src`` in its compute type) as a value of ``dst``:
        rounded to ``dst``, held in ``dst``'s compute type."""
        if src == dst:
            return v
        sd, cd = storage_type(dst), self.num.compute(dst)
        kb = self.kb
        if dtypes.is_float(src) and dtypes.is_float(dst):
            return self._fcast(self._fcast(v, sd), cd)
        if dtypes.is_float(dst):  # from an integer or bool
            cls = arith.UIToFPOp if is_unsigned(src) else arith.SIToFPOp
            return self._fcast(kb.value(cls(v, sd)), cd)
        if dst == i1:
            if dtypes.is_float(src):
                return kb.value(arith.CmpfOp(v, self.float_const(0.0, src), "une"))
            return kb.value(arith.CmpiOp(v, kb.const(0, v.type), "ne"))
        if dtypes.is_float(src):  # to an integer, through i32 for narrow ones
            wide = sd if width(sd) >= 32 else i32
            r = kb.value(arith.FPToSIOp(v, wide))
            return r if wide == sd else kb.value(arith.TruncIOp(r, sd))
        if width(v.type) < width(sd):
            cls = arith.ExtUIOp if is_unsigned(src) else arith.ExtSIOp
            return kb.value(cls(v, sd))
        if width(v.type) > width(sd):
            return kb.value(arith.TruncIOp(v, sd))
        return v  # i8 <-> ui8: the same bits

    # -- elementwise ops -----------------------------------------------------------------
    def elementwise(self, op: Operation, args: Sequence[tuple[SSAValue, Attribute, bool]]) -> SSAValue:
        """The scalar result of elementwise ``op`` on ``args`` = (value, element type, is a tensor)."""
        res = elem_of(op.results[0].type)
        if isinstance(op, tsr.CmpOp):
            (a, ea, ta), (b, eb, tb) = args
            common = promote(ea, ta, eb, tb)
            return self.compare(op.predicate.data, self.convert(a, ea, common), self.convert(b, eb, common), common)
        if isinstance(op, tsr.WhereOp):
            (c, ec, _), (a, ea, _), (b, eb, _) = args
            c = self.convert(c, ec, i1)
            ce = self.num.compute_elem(res)
            return self.kb.value(arith.SelectOp(c, self.convert(a, ea, ce), self.convert(b, eb, ce)))
        ce = self.num.compute_elem(res)
        xs = [self.convert(v, e, ce) for v, e, _ in args]
        if dtypes.is_float(res):
            return self._float_op(op, xs, res)
        return self._int_op(op, xs, res)

    def compare(self, pred: str, a: SSAValue, b: SSAValue, elem: Attribute) -> SSAValue:
        if dtypes.is_float(elem):
            return self.kb.value(arith.CmpfOp(a, b, _CMPF[pred]))
        table = _CMPU if is_unsigned(elem) else _CMPI
        return self.kb.value(arith.CmpiOp(a, b, table[pred]))

    def _float_op(self, op: Operation, xs: list[SSAValue], res: Attribute) -> SSAValue:
        kb, name = self.kb, op.name
        one = self.float_const(1.0, res)
        unary = {"tsr.exp": math.ExpOp, "tsr.log": math.LogOp, "tsr.sqrt": math.SqrtOp, "tsr.rsqrt": math.RsqrtOp,
                 "tsr.tanh": math.TanhOp, "tsr.erf": math.ErfOp, "tsr.abs": math.AbsFOp, "tsr.floor": math.FloorOp,
                 "tsr.ceil": math.CeilOp, "tsr.trunc": math.TruncOp, "tsr.round": math.RoundEvenOp}
        binary = {"tsr.add": arith.AddfOp, "tsr.sub": arith.SubfOp, "tsr.mul": arith.MulfOp, "tsr.div": arith.DivfOp,
                  "tsr.maximum": arith.MaximumfOp, "tsr.minimum": arith.MinimumfOp}
        if name in unary:
            return kb.value(unary[name](xs[0]))
        if name in binary:
            return kb.value(binary[name](xs[0], xs[1]))
        x = xs[0]
        if name == "tsr.neg":
            return kb.value(arith.NegfOp(x))
        if name == "tsr.reciprocal":
            return kb.value(arith.DivfOp(one, x))
        if name == "tsr.relu":
            return kb.value(arith.MaximumfOp(x, self.float_const(0.0, res)))
        if name in ("tsr.sigmoid", "tsr.silu"):
            denom = kb.value(arith.AddfOp(one, kb.value(math.ExpOp(kb.value(arith.NegfOp(x))))))
            return kb.value(arith.DivfOp(one if name == "tsr.sigmoid" else x, denom))
        if name == "tsr.gelu":
            return self._gelu(op, x, res)
        if name == "tsr.log1p":
            return self._log1p(x, one)
        if name == "tsr.expm1":
            return self._expm1(x, one)
        if name == "tsr.pow":
            return self._pow(op, xs, res)
        raise LoweringError(f"no kernel lowering for '{name}' on {res}")

    def _gelu(self, op: Operation, x: SSAValue, res: Attribute) -> SSAValue:
        kb = self.kb
        half, one = self.float_const(0.5, res), self.float_const(1.0, res)
        if op.approximate is not None and op.approximate.data == "tanh":
            x3 = kb.value(arith.MulfOp(kb.value(arith.MulfOp(x, x)), x))
            inner = kb.value(arith.AddfOp(x, kb.value(arith.MulfOp(self.float_const(0.044715, res), x3))))
            t = kb.value(math.TanhOp(kb.value(arith.MulfOp(self.float_const(0.7978845608028654, res), inner))))
        else:
            t = kb.value(math.ErfOp(kb.value(arith.MulfOp(x, self.float_const(0.7071067811865476, res)))))
        return kb.value(arith.MulfOp(kb.value(arith.MulfOp(half, x)), kb.value(arith.AddfOp(one, t))))

    def _log1p(self, x: SSAValue, one: SSAValue) -> SSAValue:
        """``log(1 + x)`` corrected by how far ``u = 1 + x`` rounded (Goldberg):
        ``log(u) * x / (u - 1)``; ``x`` where ``u == 1``; ``log(u)`` where ``u - 1 == u``
        (huge or infinite ``x``). No literal but 1, so no target spells an infinity."""
        kb = self.kb
        u = kb.value(arith.AddfOp(one, x))
        d = kb.value(arith.SubfOp(u, one))
        log_u = kb.value(math.LogOp(u))
        r = kb.value(arith.MulfOp(log_u, kb.value(arith.DivfOp(x, d))))
        r = kb.value(arith.SelectOp(kb.value(arith.CmpfOp(d, u, "oeq")), log_u, r))
        return kb.value(arith.SelectOp(kb.value(arith.CmpfOp(u, one, "oeq")), x, r))

    def _expm1(self, x: SSAValue, one: SSAValue) -> SSAValue:
        """``e**x - 1`` corrected by how far ``u = e**x`` rounded (Kahan):
        ``(u - 1) * x / log(u)``; ``x`` where ``u == 1``; ``u - 1`` where ``u - 1`` is
        -1 (``x`` very negative) or ``u`` (huge or infinite ``u``)."""
        kb = self.kb
        u = kb.value(math.ExpOp(x))
        um1 = kb.value(arith.SubfOp(u, one))
        r = kb.value(arith.MulfOp(um1, kb.value(arith.DivfOp(x, kb.value(math.LogOp(u))))))
        minus_one = kb.value(arith.NegfOp(one))
        exact = kb.value(arith.OrIOp(kb.value(arith.CmpfOp(um1, u, "oeq")), kb.value(arith.CmpfOp(um1, minus_one, "oeq"))))
        r = kb.value(arith.SelectOp(exact, um1, r))
        return kb.value(arith.SelectOp(kb.value(arith.CmpfOp(u, one, "oeq")), x, r))

    def _pow(self, op: Operation, xs: list[SSAValue], res: Attribute) -> SSAValue:
        kb = self.kb
        x, e = xs
        c = op.rhs.owner
        k = c.value.value.data if isinstance(c, tsr.ConstantOp) and isinstance(c.value, (FloatAttr, IntegerAttr)) else None
        if k is None or float(k) not in _POW_SPECIAL:
            return kb.value(math.PowFOp(x, e))
        k = float(k)
        if k == 1.0:
            return x
        if abs(k) == 0.5:
            return kb.value(math.SqrtOp(x) if k > 0 else math.RsqrtOp(x))
        p = kb.value(arith.MulfOp(x, x))
        if abs(k) == 3.0:
            p = kb.value(arith.MulfOp(p, x))
        if k == -1.0:
            p = x
        return p if k > 0 else kb.value(arith.DivfOp(self.float_const(1.0, res), p))

    def _int_op(self, op: Operation, xs: list[SSAValue], res: Attribute) -> SSAValue:
        kb, name = self.kb, op.name
        if res == i1:  # torch's arithmetic on booleans: * and min are "and", + and max are "or"
            logical = {"tsr.mul": arith.AndIOp, "tsr.minimum": arith.AndIOp, "tsr.add": arith.OrIOp,
                       "tsr.maximum": arith.OrIOp}
            if name not in logical or len(xs) != 2:
                raise LoweringError(f"'{name}' on booleans has no kernel lowering")
            return kb.value(logical[name](xs[0], xs[1]))
        zero = kb.const(0, xs[0].type)
        binary = {"tsr.add": arith.AddiOp, "tsr.sub": arith.SubiOp, "tsr.mul": arith.MuliOp}
        if name in binary:
            return kb.value(binary[name](xs[0], xs[1]))
        table = _CMPU if is_unsigned(res) else _CMPI
        if name in ("tsr.maximum", "tsr.minimum"):
            a, b = xs
            gt = kb.value(arith.CmpiOp(a, b, table["gt" if name == "tsr.maximum" else "lt"]))
            return kb.value(arith.SelectOp(gt, a, b))
        x = xs[0]
        if name == "tsr.neg":
            return kb.value(arith.SubiOp(zero, x))
        if name == "tsr.relu":
            return kb.value(arith.SelectOp(kb.value(arith.CmpiOp(x, zero, table["gt"])), x, zero))
        if name == "tsr.abs":
            if is_unsigned(res):
                return x
            neg = kb.value(arith.CmpiOp(x, zero, "slt"))
            return kb.value(arith.SelectOp(neg, kb.value(arith.SubiOp(zero, x)), x))
        raise LoweringError(f"no kernel lowering for '{name}' on {res}")
