"""Inline f32 expansions of transcendental functions.

A libm call in a hot loop blocks vectorization, so ``math.exp/log/tanh/erf/
powf`` on f32 become branch-free polynomials built from selects, bitcasts and
``llvm.fmuladd`` (within ~2 ulp of the correctly rounded result):

    exp(x) = 2^n * P(r),  n = round(x / ln 2),  r = x - n ln 2      (Cephes expf)
    silu(x) = x / (1 + 2^n P(r)) for -x's n and r, 2^n one factor from the rounding sum's bits
    sigmoid(x) = 1 / (1 + 2^n P(r)), the same denominator
    log(x) = e ln 2 + log(m), m in [sqrt(1/2), sqrt(2))             (Cephes logf)
    tanh(x) = x + x^3 Q(x^2) for |x| < 0.625, else sign(x) (1 - 2 / (exp(2|x|) + 1))
    erf(x) = x + x P(x^2) for |x| < 1, else sign(x) (1 - (c - a) R(a - 2)), a = min(|x|, c), c = 3.92
    powf(x, y) = exp(y log|x|), with the sign and NaN rules of C's powf

erf needs no exp and no division: both halves are polynomials (19 FMAs in all).
erfc(|x|) for 1 <= |x| <= 3.92 is the product (c - a) R(a - 2), which is 0 at
a = c, where erf(c) rounds to 1 in f32, so erf(+-inf) = +-1 exactly; ``a - 2``
is exact (Sterbenz), so R's argument carries no rounding error. Max error over
all f32: 8.45e-8 absolute, 1.42 ulp (at |x| = 1.022).

The erf and tanh coefficients are minimax fits (Lawson iterations against
double precision references, rounded to f32). f64 calls libm; f16/bf16 values
are computed in f32 and rounded once by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tessera.compiler.codegen.intrinsics import call_intrinsic
from tessera.compiler.codegen.types import F32, I1, I32

LOG2E = 1.44269504088896341
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4
ROUND_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds an f32 below 2^22 to an integer
EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
         -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
SQRT_HALF = 0.707106781186547524
TANH_Q = (-0.005717042833566666, 0.020650586113333702, -0.05374349653720856, 0.13331490755081177, -0.3333328366279602)
ERF_SMALL = (7.8538615e-05, -8.0101937e-04, 0.0051883277, -0.026853813, 0.112835854, -0.37612626,
             0.12837917)  # erf(x)/x - 1 in x^2 for |x| < 1
ERF_CLAMP = 3.92  # erfc(3.92) < 2^-25: erf rounds to 1 from here on
ERFC_LARGE = (-9.003275e-06, 5.7840123e-05, -9.240669e-05, -2.2475646e-04, 0.0010874906, -0.0012658627,
              -0.001932063, 0.009360951, -0.01648183, 0.016582284, -0.009494991,
              0.0024363298)  # erfc(a) / (ERF_CLAMP - a) in a - 2 for 1 <= a <= ERF_CLAMP
INF, NAN = float("inf"), float("nan")


def f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def i(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def like(x: ir.Value, v: float | int) -> ir.Constant:
    """``v`` as a constant of ``x``'s type: a scalar, or ``v`` in every lane of a vector."""
    t = x.type
    return ir.Constant(t, [v] * t.count) if isinstance(t, ir.VectorType) else ir.Constant(t, v)


def _lanes_of(x: ir.Value, element: ir.Type) -> ir.Type:
    """``element``, or a vector of it as wide as ``x``'s."""
    t = x.type
    return ir.VectorType(element, t.count) if isinstance(t, ir.VectorType) else element


def intrinsic(b: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value:
    return call_intrinsic(b, name, args)


def fmuladd(b: ir.IRBuilder, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
    return intrinsic(b, "llvm.fmuladd", [x, y, z])


def horner(b: ir.IRBuilder, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
    """``coeffs[0] * x^(n-1) + ... + coeffs[-1]``."""
    acc: ir.Value = like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = fmuladd(b, acc, x, like(x, c))
    return acc


def _clamp(b: ir.IRBuilder, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """``x`` limited to [lo, hi]; NaN stays NaN."""
    x = b.select(b.fcmp_ordered(">", x, like(x, hi)), like(x, hi), x)
    return b.select(b.fcmp_ordered("<", x, like(x, lo)), like(x, lo), x)


def _is_nan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", x, x)


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2^n for an i32 ``n`` (or a vector of them) in [-126, 127]."""
    return b.bitcast(b.shl(b.add(n, like(n, 127)), like(n, 23)), _lanes_of(n, F32))


def exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``exp`` of an f32, or of each lane of a vector of them."""
    xn = _is_nan(b, x)
    xc = b.select(xn, like(x, 0.0), _clamp(b, x, -104.0, 89.0))
    n = b.fsub(fmuladd(b, xc, like(x, LOG2E), like(x, ROUND_MAGIC)), like(x, ROUND_MAGIC))
    r = fmuladd(b, n, like(x, -LN2_HI), xc)
    r = fmuladd(b, n, like(x, -LN2_LO), r)
    p = fmuladd(b, horner(b, r, EXP_P), b.fmul(r, r), r)
    p = b.fadd(p, like(x, 1.0))
    ni = b.fptosi(n, _lanes_of(x, I32))
    n1 = b.ashr(ni, like(ni, 1))
    # 2^n as two factors, so that results down to the subnormals and up to inf come out right
    y = b.fmul(b.fmul(p, _pow2(b, n1)), _pow2(b, b.sub(ni, n1)))
    return b.select(xn, x, y)


MAGIC_BITS = 0x4B400000
"""The bits of ``ROUND_MAGIC``: ``ROUND_MAGIC + n`` has the bits ``MAGIC_BITS + n`` for an integer ``|n| < 2^22``."""


def one_plus_exp_neg(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``1 + exp(-x)``, the denominator of the logistic function, of an f32 or each lane
    of a vector, in 19 vector ops where ``exp`` and the add take 29: no NaN select (a NaN
    ``x`` gives a non-NaN denominator: the callers decide), and ``2^n`` is one factor
    made from the bits of the rounding sum, as ``2 P(r) * 2^(n-1)`` (``2 P`` by doubled
    coefficients): ``-x`` clamped to [-87, 89] keeps ``n - 1`` in [-127, 127], where
    ``2^-127`` rounds to 0 (the sum is 1 there anyway) and ``exp(-x)`` past the f32
    range comes out inf."""
    t = b.fneg(intrinsic(b, "llvm.maxnum", [intrinsic(b, "llvm.minnum", [x, like(x, 87.0)]), like(x, -89.0)]))
    m = fmuladd(b, t, like(x, LOG2E), like(x, ROUND_MAGIC))
    n = b.fsub(m, like(x, ROUND_MAGIC))
    r = fmuladd(b, n, like(x, -LN2_LO), fmuladd(b, n, like(x, -LN2_HI), t))
    p2 = fmuladd(b, horner(b, r, [2 * c for c in EXP_P]), b.fmul(r, r), fmuladd(b, r, like(x, 2.0), like(x, 2.0)))
    bits = b.bitcast(m, _lanes_of(x, I32))
    half_scale = b.bitcast(b.shl(b.sub(bits, like(bits, MAGIC_BITS - 126)), like(bits, 23)), x.type)
    return b.fadd(like(x, 1.0), b.fmul(p2, half_scale))


def silu(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``x / (1 + exp(-x))``: a NaN ``x`` makes the quotient NaN whatever the
    denominator, and ``silu(-inf)`` is ``-inf / inf``, NaN, as torch's is."""
    return b.fdiv(x, one_plus_exp_neg(b, x))


def sigmoid(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``1 / (1 + exp(-x))``, NaN where ``x`` is (the one select the shared
    denominator leaves to its callers)."""
    return b.select(_is_nan(b, x), x, b.fdiv(like(x, 1.0), one_plus_exp_neg(b, x)))


def log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``log`` of an f32, or of each lane of a vector of them."""
    tiny = b.fcmp_ordered("<", x, like(x, 1.17549435e-38))
    xs = b.select(tiny, b.fmul(x, like(x, 8388608.0)), x)
    bits = b.bitcast(xs, _lanes_of(x, I32))
    e = b.sub(b.and_(b.lshr(bits, like(bits, 23)), like(bits, 0xFF)), b.select(tiny, like(bits, 126 + 23), like(bits, 126)))
    m = b.bitcast(b.or_(b.and_(bits, like(bits, 0x007FFFFF)), like(bits, 0x3F000000)), x.type)
    below = b.fcmp_ordered("<", m, like(x, SQRT_HALF))
    e = b.sub(e, b.zext(below, bits.type))
    m = b.fsub(b.select(below, b.fadd(m, m), m), like(x, 1.0))
    z = b.fmul(m, m)
    y = b.fmul(b.fmul(horner(b, m, LOG_P), m), z)
    ef = b.sitofp(e, x.type)
    y = fmuladd(b, ef, like(x, LN2_LO), y)
    y = fmuladd(b, z, like(x, -0.5), y)
    r = fmuladd(b, ef, like(x, LN2_HI), b.fadd(m, y))
    r = b.select(b.fcmp_ordered("==", x, like(x, INF)), like(x, INF), r)
    r = b.select(b.fcmp_ordered("==", x, like(x, 0.0)), like(x, -INF), r)
    return b.select(b.fcmp_unordered("<", x, like(x, 0.0)), like(x, NAN), r)


def tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    a = intrinsic(b, "llvm.fabs", [x])
    z = b.fmul(x, x)
    small = fmuladd(b, b.fmul(horner(b, z, TANH_Q), z), x, x)
    e = exp(b, b.fadd(a, a))
    large = b.fsub(like(x, 1.0), b.fdiv(like(x, 2.0), b.fadd(e, like(x, 1.0))))
    large = intrinsic(b, "llvm.copysign", [large, x])
    return b.select(b.fcmp_ordered("<", a, like(x, 0.625)), small, large)


def erf(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    a = intrinsic(b, "llvm.fabs", [x])
    small = fmuladd(b, x, horner(b, b.fmul(x, x), ERF_SMALL), x)
    ac = _clamp(b, a, 1.0, ERF_CLAMP)  # NaN stays NaN
    tail = horner(b, b.fsub(ac, like(x, 2.0)), ERFC_LARGE)
    large = fmuladd(b, b.fsub(ac, like(x, ERF_CLAMP)), tail, like(x, 1.0))  # 1 - (c - a) R(a - 2)
    large = intrinsic(b, "llvm.copysign", [large, x])
    return b.select(b.fcmp_ordered("<", a, like(x, 1.0)), small, large)


def powf(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    ax = intrinsic(b, "llvm.fabs", [x])
    r = exp(b, b.fmul(y, log(b, ax)))
    ay = intrinsic(b, "llvm.fabs", [y])
    small = b.fcmp_ordered("<", ay, f(16777216.0))
    yi = b.fptosi(b.select(small, y, f(0.0)), I32)
    is_int = b.or_(b.fcmp_ordered(">=", ay, f(16777216.0)), b.fcmp_ordered("==", b.sitofp(yi, F32), y))
    odd = b.and_(small, b.trunc(yi, I1))
    neg = b.fcmp_ordered("<", x, f(0.0))
    r = b.select(b.and_(neg, odd), b.fneg(r), r)
    r = b.select(b.and_(neg, b.not_(is_int)), f(NAN), r)
    one = b.or_(b.fcmp_ordered("==", y, f(0.0)), b.fcmp_ordered("==", x, f(1.0)))
    return b.select(one, f(1.0), r)
