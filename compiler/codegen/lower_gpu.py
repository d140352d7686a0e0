"""The ``gpu`` ops of a cooperative kernel (``codegen/gpu_reductions.py``) through the target:

    %lane = gpu.thread_id x                       ->   the target's lane index (NVPTX: tid.x)
    %s = gpu.all_reduce %p { ^bb0(%x, %y): %z = arith.addf %x, %y; gpu.yield %z }
                                                  ->   the target's block reduction, its combiner
                                                       the region's ops, emitted per step

Only a GPU target knows lanes and blocks; on any other the emitter says so (``CodegenError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.ir import Operation

from tessera.compiler.codegen.lower_arith import Lowering

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter


def _thread_id(em: KernelEmitter, op: Operation, args: list[ir.Value]) -> list[ir.Value]:
    return [em.target.lane_index(em.b)]


def _all_reduce(em: KernelEmitter, op: Operation, args: list[ir.Value]) -> list[ir.Value]:
    block = op.regions[0].block

    def combine(x: ir.Value, y: ir.Value) -> ir.Value:
        em.values[block.args[0]], em.values[block.args[1]] = x, y
        (total,) = em.emit_block(block)  # ends in gpu.yield of the combined value
        return total

    return [em.target.block_reduce(em, args[0], combine)]


LOWERINGS: dict[str, Lowering] = {"gpu.thread_id": _thread_id, "gpu.all_reduce": _all_reduce}
