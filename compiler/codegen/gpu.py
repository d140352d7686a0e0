"""What GPU targets share in the kernel IR: one thread per grid point.

The lowering walks a pointwise kernel's contiguous dim in a serial ``scf.for``
(right for a CPU core, wrong for a GPU warp); on GPUs that loop becomes the
innermost grid dim, so adjacent threads touch adjacent elements (a
channels-last tensor is read along C, 32 consecutive floats per warp). Sizes
known only at run time fold alike: the grid then has ``memref.dim`` extents.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from tessera.compiler.codegen.kernel_form import argument_dim, constant_index, kernel_functions, tiles_of_dim

Extent = int | SSAValue
"""A grid extent while folding: a constant, or a value kernel_form reads as ``(arg, dim[, tile])``."""


def thread_per_point(kernels: ModuleOp) -> ModuleOp:
    """A copy of ``kernels`` in which each kernel whose parallel body ends in a
    plain counted loop (``scf.for %j = 0 to N step 1``, no ``iter_args``) has
    that loop as its innermost grid dim, and grid dims of extent 1 dropped:

        scf.parallel (%h, %w) = (0, 0) to (4, 4) { scf.for %c = 0 to 8 { B } }
     -> scf.parallel (%h, %w, %c) = (0, 0, 0) to (4, 4, 8) { B }

    ``N`` and the grid extents may be known only at run time: ``memref.dim`` of
    a kernel argument (or its tiles, ``(dim + t - 1) / t``), which the grid takes
    as is (a dynamic extent is never dropped); a bound the body computes from
    kernel arguments and constants only is hoisted ahead of the parallel loop:

        %n = memref.dim %y, %c0
        scf.parallel (%i) = (0) to (%n) { %w = memref.dim %y, %c1; scf.for %j = 0 to %w { B } }
     -> %n = memref.dim %y, %c0
        %w = memref.dim %y, %c1
        scf.parallel (%i, %j) = (0, 0) to (%n, %w) { B }

    Reduction kernels (their loops carry accumulators) keep their loops: one
    thread per output element. Other bounds leave the kernel as it is."""
    out = kernels.clone()
    for fn in kernel_functions(out):
        par = next((op for op in fn.body.block.ops if isinstance(op, scf.ParallelOp)), None)
        if par is not None:
            _fold_inner_loop(fn.body.block, par)
    return out


def _counted_loop(par: scf.ParallelOp) -> tuple[scf.ForOp, Extent, list[Operation]] | None:
    """The loop that ends ``par``'s body, its trip count and the ops of the body
    to hoist ahead of ``par`` for that count to be a grid extent."""
    ops = list(par.body.block.ops)
    if len(ops) < 2 or not isinstance(ops[-1], scf.ReduceOp) or not isinstance(ops[-2], scf.ForOp):
        return None
    loop = ops[-2]
    if loop.iter_args or loop.results or constant_index(loop.lb) != 0 or constant_index(loop.step) != 1:
        return None
    count = constant_index(loop.ub)
    if count is None:  # known at run time: an extent kernel_form reads, computable ahead of par
        hoist = _defined_in(par, loop.ub) if _dynamic_extent(loop.ub) else None
    else:
        hoist = [] if count >= 1 else None
    if hoist is None:
        return None
    # what precedes the loop is recomputed by every thread: only side-effect free ops
    if any(op.regions or not _pure(op.name) for op in ops[:-2]):
        return None
    return loop, (loop.ub if count is None else count), hoist


def _pure(name: str) -> bool:
    return name in ("memref.load", "memref.dim") or name.startswith(("arith.", "math."))


def _dynamic_extent(v: SSAValue) -> bool:
    """Whether kernel_form reads ``v`` as a grid extent ``(arg, dim)`` or ``(arg, dim, tile)``."""
    return argument_dim(v) is not None or tiles_of_dim(v) is not None


def _defined_in(par: scf.ParallelOp, v: SSAValue) -> list[Operation] | None:
    """The ops of ``par``'s body that ``v`` is computed by, in order, when they
    can move ahead of ``par``: side-effect free (``arith``, ``memref.dim``) and
    depending on nothing else of ``par`` (not on a grid index); else None."""
    body = par.body.block
    needed: set[Operation] = set()
    pending = [v]
    while pending:
        w = pending.pop()
        owner = w.owner
        if not par.is_ancestor(owner) or owner in needed:
            continue  # defined ahead of par
        if isinstance(w, BlockArgument) or not isinstance(owner, Operation):
            return None  # a grid index or a loop's
        if owner.parent_block() is not body or owner.regions or \
                not (owner.name.startswith("arith.") or owner.name == "memref.dim"):
            return None
        needed.add(owner)
        pending.extend(owner.operands)
    return [op for op in body.ops if op in needed]


def _fold_inner_loop(entry: Block, par: scf.ParallelOp) -> None:
    found = _counted_loop(par)
    if found is None:
        return
    grid: list[Extent] = []
    for v in par.upperBound:
        g = constant_index(v)
        if g is None and not _dynamic_extent(v):
            return
        grid.append(v if g is None else g)
    loop, upper, hoist = found
    kept = [i for i, g in enumerate(grid) if not (isinstance(g, int) and g == 1)]  # a dynamic extent may be > 1
    new_grid = [grid[i] for i in kept] + [upper]
    consts: dict[int, arith.ConstantOp] = {}

    def index_const(n: int):
        if n not in consts:
            consts[n] = arith.ConstantOp(IntegerAttr(n, IndexType()))
            entry.insert_op_before(consts[n], par)
        return consts[n].result

    old = par.body.block
    new = Block(arg_types=[IndexType()] * len(new_grid))
    for i, arg in enumerate(old.args):
        arg.replace_all_uses_with(new.args[kept.index(i)] if i in kept else index_const(0))
    for op in hoist:
        op.detach()
        entry.insert_op_before(op, par)
    for op in list(old.ops)[:-2]:
        op.detach()
        new.add_op(op)
    body = loop.body.block
    body.args[0].replace_all_uses_with(new.args[-1])
    for op in list(body.ops):
        op.detach()
        if isinstance(op, scf.YieldOp):
            op.erase()
        else:
            new.add_op(op)
    new.add_op(scf.ReduceOp())
    bounds = [index_const(g) if isinstance(g, int) else g for g in new_grid]
    folded = scf.ParallelOp([index_const(0)] * len(new_grid), bounds, [index_const(1)] * len(new_grid), Region(new))
    entry.insert_op_before(folded, par)
    par.detach()
    par.erase(safe_erase=False)
