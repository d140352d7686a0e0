"""Cooperative reductions on GPUs: a block of threads per grid point of a reduction kernel.

A reduction kernel's grid has one point per *kept* element (a GroupNorm's groups, a
LayerNorm's rows), often a few dozen points over thousands of reduced elements each: one
thread per point leaves a GPU idle and reads memory uncoalesced. Here every top-level loop
of such a kernel's point is shared by the ``T`` threads of a block, which walk it with
stride ``T`` from their lane (adjacent lanes read adjacent elements), and a loop's
accumulators are combined across the block by ``gpu.all_reduce`` (every lane gets the
total), with the loop's own update as the combiner:

    scf.parallel (%g) = (0) to (8) {
      %s = scf.for %i = 0 to 4096 step 1 iter_args(%a = 0.0) { ... %u = arith.addf %a, %v fastmath<reassoc> }
      %m = arith.divf %s, 4096.0
      memref.store %m, %out[%g]
    }
 -> (tsr.threads_per_point = 256)
    scf.parallel (%g) = (0) to (8) {
      %lane = gpu.thread_id x
      %i0 = arith.addi %c0, %lane
      %p = scf.for %i = %i0 to 4096 step 256 iter_args(%a = 0.0) { ... }
      %s = gpu.all_reduce %p { ^bb0(%x, %y): %z = arith.addf %x, %y fastmath<reassoc>; gpu.yield %z }
      %m = arith.divf %s, 4096.0
      scf.if (%lane == 0) { memref.store %m, %out[%g] }
    }

A loop without accumulators (a LayerNorm's normalized row) is shared alike: its iterations
are independent. A store outside every loop runs on lane 0. The kernel attribute
``tsr.threads_per_point`` tells the emitter (a block per point: ``ctaid`` is the point,
``tid`` the lane) and the runtime (``prod(grid)`` blocks) what it became.

A kernel is left as it is unless each accumulator is updated by one associative op
(``addf``/``mulf`` with ``reassoc``, ``maximumf``/``minimumf``, integer ``addi``/``ori``/
``andi``/``maxsi``/``minsi``) from an initial value that is that op's identity, through
nested loops at most, nothing is kept per thread (``memref.alloca``, vectors), no buffer it
stores to is read back, and its reductions are long enough (a static trip count of at least
half a block).
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Operation, Region, SSAValue

from tessera.compiler.codegen.kernel_form import THREADS_ATTR, constant_index, kernel_functions

_FLOAT_COMBINERS = {"arith.addf": 0.0, "arith.mulf": 1.0, "arith.maximumf": -math.inf, "arith.minimumf": math.inf}
_INT_COMBINERS = {"arith.addi": 0, "arith.ori": 0, "arith.andi": -1, "arith.maxsi": None, "arith.minsi": None}
_REASSOC = ("arith.addf", "arith.mulf")


def cooperative_reductions(kernels: ModuleOp, threads: int) -> ModuleOp:
    """A copy of ``kernels`` in which each reduction kernel that qualifies (module docstring)
    computes a grid point with ``threads`` threads."""
    out = kernels.clone()
    for fn in kernel_functions(out):
        par = next((op for op in fn.body.block.ops if isinstance(op, scf.ParallelOp)), None)
        if par is None or any(isinstance(op, memref.AllocaOp) or op.name.startswith("vector.") for op in fn.walk()):
            continue
        if _reads_what_it_writes(fn):
            continue  # a lane could read what another lane has not stored yet
        loops = [op for op in par.body.block.ops if isinstance(op, scf.ForOp)]
        combiners = [_combiners(loop) for loop in loops]
        if not _worth_sharing(loops, threads) or any(c is None for c in combiners):
            continue
        if any(isinstance(op, scf.IfOp) and any(isinstance(o, scf.ForOp) for o in op.walk())
               for op in par.body.block.ops):
            continue  # a loop under a condition: a lane may skip it, and so an all_reduce
        _share(par, [(loop, c) for loop, c in zip(loops, combiners, strict=True) if c is not None], threads)
        fn.attributes[THREADS_ATTR] = IntegerAttr(threads, 64)
    return out


def _reads_what_it_writes(fn) -> bool:
    stored = {op.memref for op in fn.walk() if isinstance(op, memref.StoreOp)}
    return any(isinstance(op, memref.LoadOp) and op.memref in stored for op in fn.walk())


def _worth_sharing(loops: list[scf.ForOp], threads: int) -> bool:
    """Whether the point's reductions run long enough to give a block's lanes work: a static
    trip count of at least ``threads / 2``, or one known only at run time."""
    reductions = [loop for loop in loops if loop.iter_args]
    if not reductions:
        return False
    for loop in reductions:
        lb, ub = constant_index(loop.lb), constant_index(loop.ub)
        if lb is None or ub is None or ub - lb >= threads // 2:
            return True
    return False


def _combiners(loop: scf.ForOp) -> list[Operation] | None:
    """The combiner of each of ``loop``'s accumulators (:func:`combiner`) when lanes may split
    it (step 1, every accumulator combinable), else None."""
    if constant_index(loop.step) != 1:
        return None
    found = [combiner(loop, k) for k in range(len(loop.iter_args))]
    return None if any(c is None for c in found) else [c for c in found if c is not None]


def combiner(loop: scf.ForOp, k: int) -> Operation | None:
    """The op that folds a value into ``loop``'s accumulator ``k`` when it is an associative op
    whose identity is the accumulator's initial value, the accumulator used by it alone
    (directly, or as the initial value of a nested loop that folds into it the same way)."""
    op = _update(loop, k)
    if op is None or not _is_identity(loop.iter_args[k], op.name):
        return None
    return op


def _update(loop: scf.ForOp, k: int) -> Operation | None:
    acc = loop.body.block.args[k + 1]
    yielded = loop.body.block.last_op
    if not isinstance(yielded, scf.YieldOp) or not acc.has_one_use():
        return None
    value = yielded.operands[k]
    owner = value.owner
    if isinstance(owner, scf.ForOp):  # a nested loop: acc is its initial value, and it folds alike
        index = owner.results.index(value)
        if owner.iter_args[index] is not acc:
            return None
        return _update(owner, index)
    if not isinstance(owner, Operation) or not (owner.name in _FLOAT_COMBINERS or owner.name in _INT_COMBINERS):
        return None
    if acc not in owner.operands or len(owner.operands) != 2:
        return None
    flags = owner.properties.get("fastmath")
    if owner.name in _REASSOC and not (isinstance(flags, arith.FastMathFlagsAttr) and FastMathFlag.REASSOC in flags.data):
        return None  # the lowering marks the folds it allows to be reordered
    return owner


def _is_identity(v: SSAValue, combiner_name: str) -> bool:
    owner = v.owner
    if not isinstance(owner, arith.ConstantOp):
        return False
    value = owner.value
    if combiner_name in _FLOAT_COMBINERS:
        return isinstance(value, FloatAttr) and value.value.data == _FLOAT_COMBINERS[combiner_name]
    if not isinstance(value, IntegerAttr) or not isinstance(value.type, IntegerType):
        return False
    width, n = value.type.width.data, value.value.data
    identity = _INT_COMBINERS[combiner_name]
    if combiner_name == "arith.maxsi":
        identity = -(1 << (width - 1))
    elif combiner_name == "arith.minsi":
        identity = (1 << (width - 1)) - 1
    unsigned = n % (1 << width)
    return unsigned == (identity % (1 << width))  # an i1 ``true`` prints as -1 or 1


def _share(par: scf.ParallelOp, loops: list[tuple[scf.ForOp, list[Operation]]], threads: int) -> None:
    body = par.body.block
    first = next(iter(body.ops))  # a parallel body ends in scf.reduce: never empty
    lane = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
    stride = arith.ConstantOp(IntegerAttr(threads, IndexType()))
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    is_lane0 = arith.CmpiOp(lane, zero, "eq")
    body.insert_ops_before([lane, stride, zero, is_lane0], first)
    for loop, updates in loops:
        start = arith.AddiOp(loop.lb, lane)
        body.insert_op_before(start, loop)
        loop.operands[0] = start.result
        loop.operands[2] = stride.result
        totals = []
        after: Operation = loop
        for result, update in zip(loop.results, updates, strict=True):
            reduce = _all_reduce(result, update)
            body.insert_op_after(reduce, after)
            after = reduce
            totals.append((result, reduce.result))
        for result, total in totals:
            for use in list(result.uses):
                if use.operation is not total.owner:
                    use.operation.operands[use.index] = total
    for op in list(body.ops):
        if isinstance(op, (memref.StoreOp, scf.IfOp)) and _stores(op):
            guard = scf.IfOp(is_lane0, [], Region(Block()))
            body.insert_op_before(guard, op)
            op.detach()
            guard.true_region.block.add_ops([op, scf.YieldOp()])


def _stores(op: Operation) -> bool:
    return any(isinstance(o, memref.StoreOp) for o in op.walk())


def _all_reduce(value: SSAValue, update: Operation) -> gpu.AllReduceOp:
    """``gpu.all_reduce`` of ``value`` over the block, combining with a copy of ``update``."""
    block = Block(arg_types=[value.type, value.type])
    combine = update.clone()
    combine.operands = [block.args[0], block.args[1]]
    block.add_ops([combine, gpu.YieldOp([combine.results[0]])])
    return gpu.AllReduceOp.from_body(Region(block), value)
