"""The reduction loops of a reduction kernel: one grid point per kept index,
nested ``scf.for`` over the reduced dims (in the input's memory order, the
contiguous one innermost) carrying the accumulators as ``iter_args``:

    %s, %mx = scf.for %k = %c0 to %c1024 step %c1 iter_args(%a = %zero, %b = %ninf) -> (f32, f32) {
      %x = ...value of the input at (..., %k)...
      %a2 = arith.addf %a, %x fastmath<reassoc> : f32
      %b2 = arith.maximumf %b, %x fastmath<reassoc> : f32
      scf.yield %a2, %b2 : f32, f32
    }

Reductions of one kernel share the loops, and reductions of the same value
share accumulators (``mean`` and ``var`` of one tensor: one sum). ``var`` is
two-pass, numerically sound in f32: the first pass sums, the second sums the
squared deviations from the mean, divided by ``max(N - correction, 0)``.
Accumulators are in the compute type of each result (f32 for a bf16 sum
under the f32-compute policy, i64 for an integer ``sum``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute, Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.shapes import DYNAMIC, elem_of, is_static, numel, shape_of

from .kernel_builder import KernelBuilder, LoweringError
from .scalar_ops import ScalarLowering, is_unsigned, width
from .values import ValueEmitter

REASSOC = arith.FastMathFlagsAttr(["reassoc"])
_FAMILY = {tsr.SumOp: "sum", tsr.MeanOp: "sum", tsr.VarOp: "sum", tsr.AmaxOp: "max", tsr.AminOp: "min"}


def _int_limit(elem: Attribute, top: bool) -> int:
    w = width(elem)
    if is_unsigned(elem):
        return (1 << w) - 1 if top else 0
    return (1 << (w - 1)) - 1 if top else -(1 << (w - 1))


class ReductionLoops:
    """Computes a kernel's reductions at one kept index."""

    def __init__(self, kb: KernelBuilder, scalars: ScalarLowering, values: ValueEmitter,
                 reductions: Sequence[Operation]):
        self.kb, self.sc, self.values = kb, scalars, values
        self.reductions = list(reductions)
        first = self.reductions[0]
        self.shape = shape_of(first.input.type)
        self.dims = first.reduced_dims()
        for r in self.reductions[1:]:
            if shape_of(r.input.type) != self.shape or r.reduced_dims() != self.dims:
                raise LoweringError("the reductions of one kernel must reduce the same dims of the same shape")
        # Loops over the reduced dims, outermost first in the input's memory order.
        self.loop_dims = [d for d in layout_of(first.input.type) if d in self.dims and self.shape[d] != 1]
        self.input = first.input
        self.dynamic = not is_static([self.shape[d] for d in self.dims])
        self.count = numel([self.shape[d] for d in self.dims]) if not self.dynamic else 0

    def _extent(self, d: int) -> int | SSAValue:
        """The input's size along reduced dim ``d`` (read inside the grid: it may take arithmetic)."""
        return self.shape[d] if self.shape[d] != DYNAMIC else self.values.extent(self.input, d)

    def _count(self, elem: Attribute, minus: float = 0.0) -> SSAValue:
        """``max(N - minus, 0)`` in float type ``elem``, N the number of reduced elements."""
        if not self.dynamic:
            return self.sc.float_const(max(self.count - minus, 0.0), elem)
        kb = self.kb
        n = kb.index(1)
        for d in self.dims:
            n = kb.times(n, kb.size(self._extent(d)))
        t = self.sc.num.compute(elem)
        x = kb.value(arith.SIToFPOp(kb.value(arith.IndexCastOp(n, i64)), t))
        if not minus:
            return x
        x = kb.value(arith.SubfOp(x, self.sc.float_const(float(minus), elem)))
        return kb.value(arith.MaximumfOp(x, self.sc.float_const(0.0, elem)))

    def _acc_elem(self, r: Operation) -> Attribute:
        return self.sc.num.compute_elem(elem_of(r.result.type))

    def _init(self, family: str, elem: Attribute) -> SSAValue:
        t = self.sc.num.compute(elem)
        if family in ("sum", "m2"):
            return self.kb.const(0, t) if not dtypes.is_float(elem) else self.kb.const(0.0, t)
        if dtypes.is_float(elem):
            return self.kb.const(float("-inf") if family == "max" else float("inf"), t)
        return self.kb.const(_int_limit(elem, family == "min"), t)

    def _update(self, family: str, elem: Attribute, acc: SSAValue, x: SSAValue) -> SSAValue:
        kb = self.kb
        if dtypes.is_float(elem):
            cls = {"sum": arith.AddfOp, "m2": arith.AddfOp, "max": arith.MaximumfOp, "min": arith.MinimumfOp}[family]
            return kb.value(cls(acc, x, REASSOC))
        if family == "sum":
            return kb.value(arith.AddiOp(acc, x))
        pred = ("ugt" if family == "max" else "ult") if is_unsigned(elem) else ("sgt" if family == "max" else "slt")
        return kb.value(arith.SelectOp(kb.value(arith.CmpiOp(x, acc, pred)), x, acc))

    def _loop(self, kept: dict[int, SSAValue], keys: list[tuple], inits: list[SSAValue],
              step: Callable[[tuple, tuple[SSAValue, ...], list[SSAValue]], SSAValue]) -> list[SSAValue]:
        """Nested loops over the reduced dims; ``step(key, index, accs)`` gives a key's next accumulator."""
        kb = self.kb

        def nest(level: int, at: dict[int, SSAValue], accs: tuple[SSAValue, ...]) -> list[SSAValue]:
            if level == len(self.loop_dims):
                idx = tuple(at.get(d, kb.index(0)) for d in range(len(self.shape)))
                return [step(k, idx, list(accs)) for k in keys]
            d = self.loop_dims[level]
            return list(kb.for_loop(self._extent(d), accs, lambda iv, a: nest(level + 1, {**at, d: iv}, a)))

        return nest(0, dict(kept), tuple(inits))

    def emit(self, kept: dict[int, SSAValue]) -> dict[Operation, SSAValue]:
        """Each reduction's value (in its result's compute type) at the kept
        index ``kept`` (input dim -> index, reduced dims absent)."""
        kb, sc = self.kb, self.sc
        keys: list[tuple] = []
        for r in self.reductions:
            key = (r.input, _FAMILY[type(r)], self._acc_elem(r))
            if key not in keys:
                keys.append(key)
        slot = {k: i for i, k in enumerate(keys)}

        def step1(key, idx, accs):
            value, family, elem = key
            x = sc.convert(self.values.at(value, idx), elem_of(value.type), elem)
            return self._update(family, elem, accs[slot[key]], x)

        firsts = self._loop(kept, keys, [self._init(f, e) for _, f, e in keys], step1)
        first = dict(zip(keys, firsts))

        means: dict[tuple, SSAValue] = {}
        m2_keys = []
        for r in self.reductions:
            if isinstance(r, tsr.VarOp):
                key = (r.input, "sum", self._acc_elem(r))
                if key not in means:
                    means[key] = kb.value(arith.DivfOp(first[key], self._count(key[2])))
                    m2_keys.append((r.input, "m2", key[2]))
        second: dict[tuple, SSAValue] = {}
        if m2_keys:
            slot2 = {k: i for i, k in enumerate(m2_keys)}

            def step2(key, idx, accs):
                value, _, elem = key
                x = sc.convert(self.values.at(value, idx), elem_of(value.type), elem)
                d = kb.value(arith.SubfOp(x, means[(value, "sum", elem)]))
                return kb.value(arith.AddfOp(accs[slot2[key]], kb.value(arith.MulfOp(d, d)), REASSOC))

            seconds = self._loop(kept, m2_keys, [self._init("m2", e) for _, _, e in m2_keys], step2)
            second = dict(zip(m2_keys, seconds))

        out: dict[Operation, SSAValue] = {}
        for r in self.reductions:
            elem = self._acc_elem(r)
            acc = first[(r.input, _FAMILY[type(r)], elem)]
            if isinstance(r, tsr.MeanOp):
                acc = kb.value(arith.DivfOp(acc, self._count(elem)))
            elif isinstance(r, tsr.VarOp):
                denom = self._count(elem, float(r.correction.value.data))
                acc = kb.value(arith.DivfOp(second[(r.input, "m2", elem)], denom))
            out[r] = sc.convert(acc, elem, elem_of(r.result.type))
        return out
