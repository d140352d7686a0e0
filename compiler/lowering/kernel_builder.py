"""Building one kernel function of the kernel IR (docs/kernel-ir.md).

A :class:`KernelBuilder` appends ops to the innermost open block, keeps the
constants in one pool that ends up at the top of the function, folds and
reuses index arithmetic, and assembles the function:

    func.func @fused_0(%x: memref<4x8xf32>, %out: memref<4x8xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
      %c0 = arith.constant 0 : index          // the pool
      ...
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) { ... scf.reduce }
      func.return
    }
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    TensorType,
    UnitAttr,
    VectorType,
    i1,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap

from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of, strides_for
from tessera.dialects.tsr.shapes import DYNAMIC

from ..errors import TesseraError

INDEX = IndexType()


class LoweringError(TesseraError):
    """A ``tsr.fused`` group that cannot be lowered to kernel IR."""


def storage_type(elem: Attribute) -> Attribute:
    """The memref element type of a tensor element type (``ui8`` is stored as ``i8``)."""
    return i8 if elem == dtypes.ui8 else elem


def loop_dims(t: TensorType) -> list[int]:
    """The dims of a tensor type worth a loop, outermost first in memory (its
    last, where there is one, the dim of stride 1)."""
    shape = t.get_shape()
    return [d for d in layout_of(t) if shape[d] != 1]


def memref_type(t: TensorType) -> MemRefType:
    """The memref of a tensor type: its shape, its layout's strides (the
    identity layout when they are the row-major ones). A stride that depends
    on a dynamic size is dynamic:

        tensor<?x8x?x?xf32, #tsr.layout<nhwc>>  ->  memref<?x8x?x?xf32, strided<[?, 1, ?, 8]>>
    """
    shape = tuple(t.get_shape())
    perm = layout_of(t)
    elem = storage_type(t.get_element_type())
    if DYNAMIC in shape:
        return MemRefType(elem, shape, StridedLayoutAttr(list(dynamic_strides(shape, perm)), 0))
    strides = strides_for(shape, perm)
    if strides == strides_for(shape, tuple(range(len(shape)))):
        return MemRefType(elem, shape)
    return MemRefType(elem, shape, StridedLayoutAttr(list(strides), 0))


def dynamic_strides(shape: Sequence[int], perm: Sequence[int]) -> list[int | None]:
    """The strides of dim order ``perm`` over ``shape``: None where a dynamic size is inside."""
    strides: list[int | None] = [None] * len(shape)
    acc: int | None = 1
    for d in reversed(perm):
        strides[d] = acc
        acc = None if acc is None or shape[d] == DYNAMIC else acc * shape[d]
    return strides


class KernelBuilder:
    """Ops of one kernel function under construction."""

    def __init__(self, name: str, arg_types: Sequence[MemRefType], outputs: Sequence[int],
                 arg_names: Sequence[str] = (), arg_dtypes: Sequence[Attribute | None] = ()):
        self.name = name
        self.arg_types = list(arg_types)
        self.arg_dtypes = list(arg_dtypes)  # an element type the storage type cannot say (ui8 as i8)
        self.outputs = list(outputs)
        self.entry = Block(arg_types=self.arg_types)
        for a, hint in zip(self.entry.args, arg_names):
            a.name_hint = hint
        self._const_ops: list[Operation] = []
        self._scratch_ops: list[Operation] = []
        self._consts: dict[tuple, SSAValue] = {}
        self._const_value: dict[SSAValue, int] = {}
        self._expr: dict[SSAValue, tuple] = {}  # index value -> (kind, operand, n) of div/rem/mul by a constant
        self._blocks: list[Block] = []
        self._caches: list[dict] = []
        self._views: dict[SSAValue, tuple[SSAValue, tuple[int, ...]]] = {}
        """Argument memref -> its ``memref.collapse_shape`` and the dims merged (:meth:`collapse`)."""

    # -- insertion ---------------------------------------------------------------------
    @property
    def args(self) -> tuple[SSAValue, ...]:
        return tuple(self.entry.args)

    def emit(self, op: Operation) -> Operation:
        self._blocks[-1].add_op(op)
        return op

    def value(self, op: Operation) -> SSAValue:
        """Emit ``op`` and return its one result."""
        return self.emit(op).results[0]

    @contextmanager
    def inside(self, block: Block) -> Iterator[Block]:
        """Append to ``block`` (a loop or branch body) within the block; values
        cached there are forgotten when it closes."""
        self._blocks.append(block)
        self._caches.append({})
        try:
            yield block
        finally:
            self._blocks.pop()
            self._caches.pop()

    def cached(self, key: tuple) -> SSAValue | None:
        for cache in reversed(self._caches):
            if key in cache:
                return cache[key]
        return None

    def remember(self, key: tuple, value: SSAValue) -> SSAValue:
        self._caches[-1][key] = value
        return value

    # -- constants ---------------------------------------------------------------------
    def const(self, value: float | int | bool, type_: Attribute) -> SSAValue:
        """A typed ``arith.constant`` from the pool (``index``, an integer or a float type)."""
        key = (type_, repr(value))
        if key not in self._consts:
            if isinstance(type_, (IndexType,)) or dtypes.is_int(type_) or type_ == i1:
                attr = IntegerAttr(_wrap_int(int(value), type_), type_)
            else:
                attr = FloatAttr(float(value), type_)
            op = arith.ConstantOp(attr)
            self._const_ops.append(op)
            self._consts[key] = op.result
            if isinstance(type_, IndexType):
                self._const_value[op.result] = int(value)
        return self._consts[key]

    def index(self, n: int) -> SSAValue:
        return self.const(n, INDEX)

    def size(self, n: int | SSAValue) -> SSAValue:
        """A size as an index value (a number from the pool)."""
        return self.index(n) if isinstance(n, int) else n

    def dim(self, ref: SSAValue, d: int) -> SSAValue:
        """The size of argument memref ``ref`` along ``d``: a constant, or for a
        dynamic size ``memref.dim`` in the pool (the kernel reads it at run time).
        Of a collapsed argument (:meth:`collapse`), the merged dims' innermost is
        the row's length, its outer ones are 1."""
        view = self._views.get(ref)
        if view is not None and d in view[1]:
            return self._row_length(ref, view[1]) if d == view[1][-1] else self.index(1)
        return self._own_dim(ref, d)

    def _own_dim(self, ref: SSAValue, d: int) -> SSAValue:
        n = ref.type.get_shape()[d]
        if n != DYNAMIC:
            return self.index(n)
        key = ("dim", ref, d)
        if key not in self._consts:
            op = memref.DimOp(ref, self.index(d))
            self._const_ops.append(op)
            self._consts[key] = op.result
        return self._consts[key]

    def _row_length(self, ref: SSAValue, group: tuple[int, ...]) -> SSAValue:
        """The product of ``ref``'s sizes along ``group``, in the pool: a constant,
        or where one is dynamic the product of a ``memref.dim`` of each (a grid
        extent the kernel form reads: ``kernel_form.tiles_of_dim``)."""
        key = ("row", ref, group)
        if key not in self._consts:
            sizes = [ref.type.get_shape()[d] for d in group]
            if DYNAMIC not in sizes:
                self._consts[key] = self.index(math.prod(sizes))
                return self._consts[key]
            n: SSAValue | None = None
            for d in group:
                dim = memref.DimOp(ref, self.index(d))
                ops: list[Operation] = [dim] if n is None else [dim, arith.MuliOp(n, dim.result)]
                self._const_ops += ops
                n = ops[-1].results[0]
            self._consts[key] = n
        return self._consts[key]

    # -- collapsed arguments -----------------------------------------------------------
    def collapse(self, ref: SSAValue, group: Sequence[int]) -> None:
        """Reads and writes of argument ``ref`` go through a ``memref.collapse_shape``
        of it (in the pool) merging the consecutive dims ``group`` into one row
        (``row_dims``). Callers keep indexing ``ref``'s own dims: the group's
        innermost dim indexes the row, its outer dims are always 0.

            memref<?x144x?x?xf32, strided<[?, ?, ?, 1]>>  (2, 3) ->  memref<?x144x?xf32, strided<[?, ?, 1]>>
        """
        t = ref.type
        shape, strides = list(t.get_shape()), list(t.get_strides())
        first, last = group[0], group[-1]
        sizes = [shape[d] for d in group]
        merged = DYNAMIC if DYNAMIC in sizes else math.prod(sizes)
        new_shape = [*shape[:first], merged, *shape[last + 1:]]
        new_strides = [*strides[:first], strides[last], *strides[last + 1:]]
        row_major = DYNAMIC not in new_shape and new_strides == list(strides_for(new_shape, tuple(range(len(new_shape)))))
        layout: Attribute = NoneAttr() if row_major else StridedLayoutAttr(new_strides, 0)
        rank = len(shape)
        groups = [[d] for d in range(first)] + [list(group)] + [[d] for d in range(last + 1, rank)]
        op = memref.CollapseShapeOp.create(
            operands=[ref], result_types=[MemRefType(t.get_element_type(), new_shape, layout)],
            properties={"reassociation": ArrayAttr([ArrayAttr([IntegerAttr(d, i64) for d in g]) for g in groups])})
        self._const_ops.append(op)
        self._views[ref] = (op.results[0], tuple(group))

    def _through_view(self, ref: SSAValue, idx: Sequence[SSAValue],
                      dim: int | None = None) -> tuple[SSAValue, list[SSAValue], int | None]:
        """``ref``, an index of it and a dim of it as the collapsed memref of ``ref`` takes them."""
        view = self._views.get(ref)
        if view is None:
            return ref, list(idx), dim
        collapsed, group = view
        keep = [d for d in range(len(idx)) if d not in group[:-1]]
        if dim is not None and dim not in keep:
            raise LoweringError(f"a vector along dim {dim}, inside the collapsed dims {list(group)}")
        return collapsed, [idx[d] for d in keep], None if dim is None else keep.index(dim)

    def tiles(self, n: int | SSAValue, width: int) -> int | SSAValue:
        """How many ``width``-wide tiles cover ``n`` (a size, or a dynamic size's value):
        ``(n + width - 1) / width``, a grid extent the kernel form reads (``kernel_form``)."""
        if isinstance(n, int):
            return -(-n // width)
        key = ("tiles", n, width)
        if key not in self._consts:  # in the pool, ahead of the grid it bounds
            add = arith.AddiOp(n, self.index(width - 1))
            div = arith.DivUIOp(add.result, self.index(width))
            self._const_ops += [add, div]
            self._consts[key] = div.result
        return self._consts[key]

    def times(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """``a * b`` of two index values (a constant side folds to :meth:`mul`)."""
        if (kb := self.known(b)) is not None:
            return self.mul(a, kb)
        if (ka := self.known(a)) is not None:
            return self.mul(b, ka)
        return self._arith(arith.MuliOp, a, b)

    def known(self, v: SSAValue) -> int | None:
        """The value of an index constant from the pool, else None."""
        return self._const_value.get(v)

    # -- index arithmetic (folded and reused) ------------------------------------------
    def _arith(self, cls: type[Operation], *operands: SSAValue, **kw) -> SSAValue:
        key = (cls, *operands, *sorted(kw.items()))
        hit = self.cached(key)
        if hit is not None:
            return hit
        return self.remember(key, self.value(cls(*operands, **kw)))

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.index(b) if isinstance(b, int) else b
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.index(ka + kb)
        if ka == 0:
            return b
        if kb == 0:
            return a
        for x, y in ((a, b), (b, a)):  # (v / n) * n + v % n == v
            m, r = self._expr.get(x), self._expr.get(y)
            if m and r and m[0] == "mul" and r[0] == "rem":
                q = self._expr.get(m[1])
                if q == ("div", r[1], r[2]) and m[2] == r[2]:
                    return r[1]
        return self._arith(arith.AddiOp, a, b)

    def sub(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self.index(b) if isinstance(b, int) else b
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.index(ka - kb)
        if kb == 0:
            return a
        return self._arith(arith.SubiOp, a, b)

    def mul(self, a: SSAValue, n: int) -> SSAValue:
        ka = self.known(a)
        if ka is not None:
            return self.index(ka * n)
        if n == 1:
            return a
        if n == 0:
            return self.index(0)
        return self._note(self._arith(arith.MuliOp, a, self.index(n)), "mul", a, n)

    def div(self, a: SSAValue, n: int) -> SSAValue:
        ka = self.known(a)
        if ka is not None:
            return self.index(ka // n)
        if n == 1:
            return a
        return self._note(self._arith(arith.DivUIOp, a, self.index(n)), "div", a, n)

    def rem(self, a: SSAValue, n: int) -> SSAValue:
        ka = self.known(a)
        if ka is not None:
            return self.index(ka % n)
        if n == 1:
            return self.index(0)
        return self._note(self._arith(arith.RemUIOp, a, self.index(n)), "rem", a, n)

    def _note(self, v: SSAValue, kind: str, a: SSAValue, n: int) -> SSAValue:
        self._expr[v] = (kind, a, n)
        return v

    def cmp(self, pred: str, a: SSAValue, b: SSAValue | int) -> SSAValue:
        """``a PRED b`` on signed indices (``slt``, ``sge``, ...)."""
        b = self.index(b) if isinstance(b, int) else b
        return self._arith(arith.CmpiOp, a, b, arg=pred)

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._arith(arith.SelectOp, cond, a, b)

    def both(self, a: SSAValue | None, b: SSAValue) -> SSAValue:
        return b if a is None else self._arith(arith.AndIOp, a, b)

    def min(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        """``min(a, b)`` of signed indices."""
        b = self.index(b) if isinstance(b, int) else b
        return self.select(self.cmp("slt", a, b), a, b)

    def clamp(self, a: SSAValue, hi: int) -> SSAValue:
        """``min(max(a, 0), hi)`` with compares and selects."""
        zero, top = self.index(0), self.index(hi)
        a = self.select(self.cmp("slt", a, zero), zero, a)
        return self.select(self.cmp("sgt", a, top), top, a)

    # -- memory --------------------------------------------------------------------------
    def scratch(self, t: MemRefType) -> SSAValue:
        """A ``memref.alloca`` of static shape at the top of the function (the
        emitter allocates it once per call; each grid point reuses it)."""
        op = memref.AllocaOp.get(t.get_element_type(), shape=t.get_shape())
        self._scratch_ops.append(op)
        return op.memref

    def load(self, ref: SSAValue, idx: Sequence[SSAValue]) -> SSAValue:
        ref, idx, _ = self._through_view(ref, idx)
        key = ("load", ref, *idx)
        hit = self.cached(key)
        if hit is not None:
            return hit
        return self.remember(key, self.value(memref.LoadOp.get(ref, idx)))

    def read_along(self, ref: SSAValue, idx: Sequence[SSAValue], dim: int, vec: VectorType) -> SSAValue:
        """``vec``'s length of elements of ``ref`` from ``idx`` along ``dim``, in bounds
        (``vector.transfer_read``: one vector load where ``dim`` has stride 1)."""
        ref, idx, dim = self._through_view(ref, idx, dim)
        elem = vec.element_type
        pad = self.const(0.0 if dtypes.is_float(elem) else 0, elem)  # never read: the reads are in bounds
        return self.value(vector.TransferReadOp(ref, idx, pad, vec, *_along(len(idx), dim)))

    def write_along(self, v: SSAValue, ref: SSAValue, idx: Sequence[SSAValue], dim: int) -> None:
        """Vector ``v`` into ``ref`` from ``idx`` along ``dim``, in bounds
        (``vector.transfer_write``: one vector store where ``dim`` has stride 1)."""
        ref, idx, dim = self._through_view(ref, idx, dim)
        in_bounds, along = _along(len(idx), dim)
        self.emit(vector.TransferWriteOp(v, ref, idx, in_bounds, permutation_map=along))

    def store(self, v: SSAValue, ref: SSAValue, idx: Sequence[SSAValue]) -> None:
        ref, idx, _ = self._through_view(ref, idx)
        self.emit(memref.StoreOp.get(v, ref, idx))

    # -- structured control flow ----------------------------------------------------------
    def for_loop(self, upper: int | SSAValue, inits: Sequence[SSAValue],
                 body: Callable[[SSAValue, tuple[SSAValue, ...]], Sequence[SSAValue]]) -> tuple[SSAValue, ...]:
        """``scf.for %i = 0 to upper step 1 iter_args(inits)``; ``body(i, accs)``
        returns the next accumulators (nothing without ``inits``)."""
        block = Block(arg_types=[INDEX, *(v.type for v in inits)])
        with self.inside(block):
            nxt = body(block.args[0], tuple(block.args[1:]))
            self.emit(scf.YieldOp(*nxt))
        loop = self.emit(scf.ForOp(self.index(0), self.size(upper), self.index(1), list(inits), Region(block)))
        return tuple(loop.results)

    def if_else(self, cond: SSAValue, types: Sequence[Attribute],
                then: Callable[[], Sequence[SSAValue]], other: Callable[[], Sequence[SSAValue]]) -> tuple[SSAValue, ...]:
        blocks = []
        for fn in (then, other):
            block = Block()
            with self.inside(block):
                self.emit(scf.YieldOp(*fn()))
            blocks.append(block)
        op = self.emit(scf.IfOp(cond, list(types), Region(blocks[0]), Region(blocks[1])))
        return tuple(op.results)

    def parallel(self, grid: Sequence[int | SSAValue], body: Callable[[tuple[SSAValue, ...]], None]) -> None:
        """The kernel's one top-level ``scf.parallel`` over ``grid`` (``(1)`` when
        empty; a dynamic extent is a :meth:`dim` of an argument)."""
        grid = list(grid) or [1]
        block = Block(arg_types=[INDEX] * len(grid))
        self._blocks.append(self.entry)
        self._caches.append({})
        with self.inside(block):
            body(tuple(block.args))
            self.emit(scf.ReduceOp())
        zeros, ones = [self.index(0)] * len(grid), [self.index(1)] * len(grid)
        self.emit(scf.ParallelOp(zeros, [self.size(n) for n in grid], ones, Region(block)))
        self._blocks.pop()
        self._caches.pop()

    def finish(self) -> func.FuncOp:
        """The kernel function: the constant pool, the parallel loop, ``func.return``."""
        _prune(self.entry)
        first = self.entry.first_op
        for op in [*self._const_ops, *self._scratch_ops]:
            if not op.results[0].uses:
                continue
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)  # the pool stays in creation order
        self.entry.add_op(func.ReturnOp())
        arg_attrs = None
        if any(d is not None for d in self.arg_dtypes):
            arg_attrs = ArrayAttr([DictionaryAttr({"tsr.dtype": d} if d is not None else {}) for d in self.arg_dtypes])
        fn = func.FuncOp(self.name, (self.arg_types, []), Region(self.entry), arg_attrs=arg_attrs)
        fn.attributes["tsr.kernel"] = UnitAttr()
        fn.attributes["tsr.outputs"] = DenseArrayBase.from_list(i64, self.outputs)
        return fn


def _along(rank: int, dim: int) -> tuple[ArrayAttr, AffineMapAttr]:
    """A 1-D transfer's ``in_bounds`` and permutation map: along ``dim`` of a rank-``rank`` memref."""
    return ArrayAttr([BoolAttr.from_bool(True)]), AffineMapAttr(AffineMap(rank, 0, (AffineExpr.dimension(dim),)))


def _prune(block: Block) -> None:
    """Erase the arith/math ops whose results nothing uses (operands computed
    for an op that did not need them, such as the exponent of ``x ** 2``)."""
    for op in list(block.walk(reverse=True)):
        if op.dialect_name() in ("arith", "math") and not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def _wrap_int(v: int, t: Attribute) -> int:
    """An integer as the signless constant of its width holds it (two's complement)."""
    if isinstance(t, IndexType) or t == i1:
        return v
    width = t.width.data
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


