"""What GPU targets share in the kernel IR: one thread per grid point.

The lowering walks a pointwise kernel's contiguous dim in a serial ``scf.for``
(right for a CPU core, wrong for a GPU warp); on GPUs that loop becomes the
innermost grid dim, so adjacent threads touch adjacent elements (a
channels-last tensor is read along C, 32 consecutive floats per warp).
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region

from tessera.compiler.codegen.kernel_form import constant_index, kernel_functions


def thread_per_point(kernels: ModuleOp) -> ModuleOp:
    """A copy of ``kernels`` in which each kernel whose parallel body ends in a
    plain counted loop (``scf.for %j = 0 to N step 1``, no ``iter_args``) has
    that loop as its innermost grid dim, and grid dims of extent 1 dropped:

        scf.parallel (%h, %w) = (0, 0) to (4, 4) { scf.for %c = 0 to 8 { B } }
     -> scf.parallel (%h, %w, %c) = (0, 0, 0) to (4, 4, 8) { B }

    Reduction kernels (their loops carry accumulators) keep their loops: one
    thread per output element."""
    out = kernels.clone()
    for fn in kernel_functions(out):
        par = next((op for op in fn.body.block.ops if isinstance(op, scf.ParallelOp)), None)
        if par is not None:
            _fold_inner_loop(fn.body.block, par)
    return out


def _counted_loop(par: scf.ParallelOp) -> tuple[scf.ForOp, int] | None:
    ops = list(par.body.block.ops)
    if len(ops) < 2 or not isinstance(ops[-1], scf.ReduceOp) or not isinstance(ops[-2], scf.ForOp):
        return None
    loop = ops[-2]
    if loop.iter_args or loop.results or constant_index(loop.lb) != 0 or constant_index(loop.step) != 1:
        return None
    upper = constant_index(loop.ub)
    if upper is None or upper < 1:
        return None
    # what precedes the loop is recomputed by every thread: only side-effect free ops
    if any(op.regions or not _pure(op.name) for op in ops[:-2]):
        return None
    return loop, upper


def _pure(name: str) -> bool:
    return name == "memref.load" or name.startswith(("arith.", "math."))


def _fold_inner_loop(entry: Block, par: scf.ParallelOp) -> None:
    found = _counted_loop(par)
    if found is None or any(constant_index(v) is None for v in par.upperBound):
        return
    loop, upper = found
    grid = [constant_index(v) for v in par.upperBound]
    kept = [i for i, g in enumerate(grid) if g != 1]
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
    bounds = [index_const(g) for g in new_grid]
    folded = scf.ParallelOp([index_const(0)] * len(new_grid), bounds, [index_const(1)] * len(new_grid), Region(new))
    entry.insert_op_before(folded, par)
    par.detach()
    par.erase(safe_erase=False)
