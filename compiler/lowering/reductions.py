"""The reduction loops of a reduction kernel: one grid point per kept index,
nested ``scf.for`` over the reduced dims (in the input's memory order, the
contiguous one innermost; dims next to each other in memory in one loop)
carrying the accumulators as ``iter_args``:

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

Where the kept dims include the input's contiguous one (a channels-last
tensor pooled over space, BatchNorm's statistics and its backward's sums in
training), a grid point computes a vector of neighbours along it
(:meth:`ReductionLoops.emit_vector`), what it sums computed as vectors too
(``lane_values``): one point per index would read its elements ``C`` apart,
one by one.

    %s = scf.for %h = %c0 to %c112 step %c1 iter_args(%a = %zeros) -> (vector<16xf32>) {
      %x = vector.transfer_read %in0[%c0, %c16i, %h, %w], %pad {permutation_map = (d0, d1, d2, d3) -> (d1)}
      %a2 = arith.addf %a, %x fastmath<reassoc> : vector<16xf32>
      ...
    }
    %s0 = vector.extract %s[0] : f32 from vector<16xf32>     // each lane's epilogue is scalar
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import VectorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.shapes import DYNAMIC, elem_of, is_static, numel, shape_of

from . import index_maps
from .kernel_builder import KernelBuilder, LoweringError, loop_dims, storage_type
from .lane_values import LaneValues
from .scalar_ops import ScalarLowering, is_unsigned, width
from .values import ValueEmitter

REASSOC = arith.FastMathFlagsAttr(["reassoc"])
VECTOR_CHAINS = 4
"""Independent vector accumulators of :meth:`ReductionLoops.emit_vector`'s innermost loop:
one chain waits on the adder's latency (``mean`` of 1x32x112x112 NHWC, a whole compiled
call on an AMD EPYC core: 65 us with one chain, 49 with four)."""
BLOCK = 64
"""The most steps of a static innermost reduction loop summed from zero before their sum
is added to the total (BatchNorm's bias gradient over 8x32x32 NHWC: 2048 steps a chain
summed in one run were 3.7e-4 from float64, eager 8.7e-5)."""
_FAMILY = {tsr.SumOp: "sum", tsr.MeanOp: "sum", tsr.VarOp: "sum", tsr.AmaxOp: "max", tsr.AminOp: "min"}


def _block(steps: int) -> int:
    """The steps of an innermost loop's blocks: all where they are :data:`BLOCK` or fewer,
    else the largest divisor of ``steps`` up to it (all where that is 8 or less: blocks
    that short would not pay their loop)."""
    if steps <= BLOCK:
        return steps
    best = max(d for d in range(1, BLOCK + 1) if steps % d == 0)
    return best if best > 8 else steps


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
        self.input = self.stored(first.input)
        # Loops over the reduced dims, outermost first in the input's memory order.
        self.loop_dims = [d for d in loop_dims(self.input.type) if d in self.dims]
        self.dynamic = not is_static([self.shape[d] for d in self.dims])
        self.count = numel([self.shape[d] for d in self.dims]) if not self.dynamic else 0

    def stored(self, value: SSAValue) -> SSAValue:
        """What a reduction of ``value`` reads in memory: the kernel argument a
        ``tsr.relayout`` of it views in another layout (the same elements at the
        same logical indices), else ``value``.

            %c = tsr.relayout %arg : (tensor<8x64x32x32xf32, nhwc>) -> (... nchw)
            %v = tsr.var %c {dims = [0, 2, 3]}      // reads %arg: channels innermost
        """
        op = value.owner
        if isinstance(op, tsr.RelayoutOp) and op.input in self.values.inputs:
            return op.input
        return value

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

    def _loop_groups(self) -> list[tuple[int, ...]]:
        """The reduced dims' loops, outermost first: dims that lie next to each other
        in the stored input (``loop_dims`` neighbours, static sizes) share one loop
        over their product, whose index is split back into theirs. The elements it
        walks are then evenly spaced (``h * W + w``: one run of ``H * W`` of an NCHW
        plane, where one loop of ``W`` each would be too short to vectorize).

            loop_dims (n, h, w) of nchw, kept c  ->  loops (n) (h, w)
        """
        order = loop_dims(self.input.type)
        groups: list[tuple[int, ...]] = []
        for d in self.loop_dims:
            prev = groups[-1][-1] if groups else None
            if (prev is not None and order.index(d) == order.index(prev) + 1
                    and DYNAMIC not in (self.shape[d], self.shape[prev])):
                groups[-1] += (d,)
            else:
                groups.append((d,))
        return groups

    def _extent_of(self, group: tuple[int, ...]) -> int | SSAValue:
        return self._extent(group[0]) if len(group) == 1 else numel([self.shape[d] for d in group])

    def _split(self, group: tuple[int, ...], iv: SSAValue) -> dict[int, SSAValue]:
        """Each dim's index from the index of ``group``'s loop (a row-major reshape;
        a dim alone, perhaps of a dynamic size, is the loop's index)."""
        if len(group) == 1:
            return {group[0]: iv}
        sizes = [self.shape[d] for d in group]
        return dict(zip(group, index_maps.reshape(self.kb, (iv,), sizes, [numel(sizes)])))

    def _loop(self, kept: dict[int, SSAValue], keys: list[tuple], inits: list[SSAValue],
              step: Callable[[tuple, tuple[SSAValue, ...], list[SSAValue]], SSAValue],
              chains: int = 1) -> list[SSAValue]:
        """Nested loops over the reduced dims (:meth:`_loop_groups`); ``step(key,
        index, accs)`` gives a key's next accumulator. ``chains`` > 1 (vector
        accumulators): the innermost loop, where its static size allows, steps that
        many indices at a time into as many accumulators, combined at its end:
        independent additions, not one chain bound by the adder's latency; it sums
        from ``inits`` and its sum is added to the outer loops' (a two-level sum:
        each addition's error grows with one row's length, not the whole
        reduction's), a long static one in blocks of at most :data:`BLOCK` steps.
        A scalar accumulator runs through the whole nest: LLVM vectorizes its
        innermost loop into partial sums."""
        kb = self.kb
        groups = self._loop_groups()
        k = len(keys)

        def add(xs: Sequence[SSAValue], ys: Sequence[SSAValue]) -> list[SSAValue]:
            return [self._update(key[1], key[2], x, y) for key, x, y in zip(keys, xs, ys)]

        def nest(level: int, at: dict[int, SSAValue], accs: tuple[SSAValue, ...]) -> list[SSAValue]:
            if level == len(groups):
                idx = tuple(at.get(d, kb.index(0)) for d in range(len(self.shape)))
                return [step(key, idx, list(accs)) for key in keys]
            group = groups[level]
            n = self._extent_of(group)

            def inside(iv: SSAValue, a: tuple[SSAValue, ...]) -> list[SSAValue]:
                return nest(level + 1, {**at, **self._split(group, iv)}, a)

            if level < len(groups) - 1 or chains == 1:
                return list(kb.for_loop(n, accs, inside))
            width = chains if isinstance(n, int) and n % chains == 0 and n != chains else 1
            steps = n // width if isinstance(n, int) else n
            block = _block(steps) if isinstance(steps, int) else steps

            def run(first: SSAValue | int, count: int | SSAValue) -> list[SSAValue]:
                """``count`` steps of ``width`` indices from step ``first``, from ``inits``."""
                def unrolled(iv: SSAValue, a: tuple[SSAValue, ...]) -> list[SSAValue]:
                    base = kb.mul(kb.add(iv, first), width)
                    return [x for j in range(width) for x in inside(kb.add(base, j), a[j * k:(j + 1) * k])]

                parts = kb.for_loop(count, tuple(inits) * width, unrolled)
                out = list(parts[:k])
                for j in range(1, width):
                    out = add(out, parts[j * k:(j + 1) * k])
                return out

            if block == steps:
                return run(0, steps) if level == 0 else add(accs, run(0, steps))  # level 0: accs are inits
            return list(kb.for_loop(steps // block, accs, lambda bv, a: add(a, run(kb.mul(bv, block), block))))

        return nest(0, dict(kept), tuple(inits))

    def _keys(self) -> list[tuple]:
        """(input, accumulator family, accumulator element) of each distinct accumulator."""
        keys: list[tuple] = []
        for r in self.reductions:
            key = (r.input, _FAMILY[type(r)], self._acc_elem(r))
            if key not in keys:
                keys.append(key)
        return keys

    def emit(self, kept: dict[int, SSAValue]) -> dict[Operation, SSAValue]:
        """Each reduction's value (in its result's compute type) at the kept
        index ``kept`` (input dim -> index, reduced dims absent)."""
        kb, sc = self.kb, self.sc
        keys = self._keys()
        slot = {k: i for i, k in enumerate(keys)}

        def step1(key, idx, accs):
            value, family, elem = key
            x = sc.convert(self.values.at(value, idx), elem_of(value.type), elem)
            return self._update(family, elem, accs[slot[key]], x)

        firsts = self._loop(kept, keys, [self._init(f, e) for _, f, e in keys], step1)
        first = dict(zip(keys, firsts))
        means = {(value, "sum", elem): kb.value(arith.DivfOp(first[(value, "sum", elem)], self._count(elem)))
                 for value, elem in self._variances()}
        m2_keys = [(value, "m2", elem) for value, elem in self._variances()]
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
        return self._results(first, second)

    def _variances(self) -> list[tuple[SSAValue, Attribute]]:
        """(input, accumulator element) of each distinct ``var``: its second pass."""
        out: list[tuple[SSAValue, Attribute]] = []
        for r in self.reductions:
            if isinstance(r, tsr.VarOp) and (r.input, self._acc_elem(r)) not in out:
                out.append((r.input, self._acc_elem(r)))
        return out

    def _results(self, first: dict[tuple, SSAValue], second: dict[tuple, SSAValue]) -> dict[Operation, SSAValue]:
        """Each reduction's value from the accumulators (``second``: the variances' squared deviations)."""
        kb, sc = self.kb, self.sc
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

    # -- a vector of kept indices per grid point ------------------------------------------
    def vector_lanes(self, dim: int) -> bool:
        """Whether :meth:`emit_vector` computes neighbours along kept dim ``dim``:
        every reduction sums (or takes the max of) floats in their own type, and
        the tensor the loops walk is contiguous along ``dim``. What each reads is
        computed as vectors along ``dim`` (``LaneValues``): one vector read per
        argument contiguous along it."""
        for r in self.reductions:
            elem = elem_of(r.input.type)
            if (not dtypes.is_float(elem) or self.sc.num.compute(elem) != storage_type(elem)
                    or self._acc_elem(r) != elem):
                return False
        return loop_dims(self.input.type)[-1:] == [dim]

    def emit_vector(self, kept: dict[int, SSAValue], dim: int, lanes: int) -> list[dict[Operation, SSAValue]]:
        """:meth:`emit` at the ``lanes`` kept indices from ``kept`` along ``dim``
        (where :meth:`vector_lanes`): the accumulators are vectors, each lane's
        epilogue scalar. Gives each lane's results."""
        kb = self.kb
        keys = self._keys()
        slot = {k: i for i, k in enumerate(keys)}
        vec = {k: VectorType(k[2], [lanes]) for k in keys}

        lane_values = LaneValues(self.values, lanes)

        def read(value: SSAValue, idx: tuple[SSAValue, ...]) -> SSAValue:
            return lane_values.at(value, idx, dim)

        def splat(x: SSAValue, t: VectorType) -> SSAValue:
            return kb.value(vector.BroadcastOp(x, t))

        def step1(key, idx, accs):
            return self._update(key[1], key[2], accs[slot[key]], read(key[0], idx))

        firsts = self._loop(kept, keys, [splat(self._init(f, e), vec[(v, f, e)]) for v, f, e in keys], step1,
                            VECTOR_CHAINS)
        first = dict(zip(keys, firsts))
        m2_keys = [(value, "m2", elem) for value, elem in self._variances()]
        second: dict[tuple, SSAValue] = {}
        if m2_keys:
            means = {k: kb.value(arith.DivfOp(first[(k[0], "sum", k[2])], splat(self._count(k[2]), vec[(k[0], "sum", k[2])])))
                     for k in m2_keys}

            slot2 = {k: i for i, k in enumerate(m2_keys)}

            def step2(key, idx, accs):
                d = kb.value(arith.SubfOp(read(key[0], idx), means[key]))
                return kb.value(arith.AddfOp(accs[slot2[key]], kb.value(arith.MulfOp(d, d)), REASSOC))

            zeros = [splat(self._init("m2", e), VectorType(e, [lanes])) for _, _, e in m2_keys]
            second = dict(zip(m2_keys, self._loop(kept, m2_keys, zeros, step2, VECTOR_CHAINS)))

        def lane(accs: dict[tuple, SSAValue], i: int) -> dict[tuple, SSAValue]:
            return {k: kb.value(vector.ExtractOp(v, [i], k[2])) for k, v in accs.items()}

        return [self._results(lane(first, i), lane(second, i)) for i in range(lanes)]
