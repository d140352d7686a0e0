"""The LLVM side shared by CPU targets: kernels walk a ``[lo, hi)`` slice of the flattened grid.

    define void @fused_0(ptr noalias %arg0, ptr noalias %arg1, i64 %lo, i64 %hi)
    define void @fused_1(ptr noalias %arg0, ptr noalias %arg1, ptr noalias %dims, i64 %lo, i64 %hi)  ; dynamic sizes

The runtime splits the grid into chunks, one per thread (``runtime/cpu.py``).
The walk goes row by row over the innermost grid dim: ``lo`` de-flattened once
(div/rem by the grid's extents, run-time values where sizes are dynamic), each
next row's outer indices stepped like an odometer (an add, a compare and a select
per dim: no division per row, which a dynamic grid of short rows paid for), and
a plain counted loop inside a row that LLVM's loop vectorizer can widen when the
body is a straight line (grid == tensor shape).
When a grid point has loops of its own, that loop carries a hint that keeps the
vectorizer off it (:func:`scalar_loop`): the vectors belong to the inner loops.
A CPU target (``targets/x86``, ``targets/aarch64``) sets its triple, CPU and
features on top of this.
"""

from __future__ import annotations

from collections.abc import Sequence

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.compiler.codegen.irbuild import loop_hint, loop_id
from tessera.compiler.codegen.llvm_target import BodyEmitter, LlvmTarget, extent
from tessera.compiler.codegen.types import I64


def scalar_loop(module: ir.Module) -> ir.MDValue:
    """An ``llvm.loop`` ID that keeps LLVM's loop vectorizer off one loop:

        br i1 %more, label %grid.col, label %grid.row, !llvm.loop !1
        !0 = !{!"llvm.loop.vectorize.enable", i1 false}
        !1 = !{!1, !0}                                ; a loop ID names itself first

    The walk over grid points takes it when a grid point has loops of its own.
    LLVM unrolls a short inner loop (a row of 32) fully and would then widen the
    walk over rows instead, with gathers and scatters across rows: 3-4x slower than
    the unrolled row's own vector loads (a BatchNorm backward over 8x64x32x32)."""
    return loop_id(module, loop_hint(module, "llvm.loop.vectorize.enable", False))


class CpuLlvmTarget(LlvmTarget):
    """A CPU: ELF objects loadable by MCJIT, kernels called with a ``[lo, hi)`` range."""

    artifact_kind = "obj"
    # The large code model with absolute relocations: MCJIT may place sections
    # more than 2 GiB apart, which PC-relative (small model) references cannot span.
    reloc = "static"
    codemodel = "large"

    def declare_kernel(self, module: ir.Module, name: str, num_buffers: int,
                       num_dims: int = 0) -> tuple[ir.Function, list[ir.Value]]:
        ptr = self.buffer_pointer_type()
        dims = [ptr] if num_dims else []
        fnty = ir.FunctionType(ir.VoidType(), [ptr] * num_buffers + dims + [I64, I64])
        fn = ir.Function(module, fnty, name=name)
        for i, a in enumerate(fn.args[:num_buffers]):
            a.name = f"arg{i}"
            a.add_attribute("noalias")
        if num_dims:
            fn.args[num_buffers].name = "dims"
            fn.args[num_buffers].add_attribute("noalias")
        fn.args[-2].name, fn.args[-1].name = "lo", "hi"
        return fn, list(fn.args[:num_buffers])

    def read_dims(self, builder: ir.IRBuilder, fn: ir.Function, num_buffers: int, num_dims: int) -> list[ir.Value]:
        """Loads of the ``i64 dims[num_dims]`` array the pointer after the buffers points to."""
        array = fn.args[num_buffers]
        return [builder.load(builder.gep(array, [ir.Constant(I64, k)], inbounds=True, source_etype=I64), typ=I64,
                             name=f"dim{k}") for k in range(num_dims)]

    def emit_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value],
                  body: BodyEmitter, vectorize: bool = True) -> None:
        lo, hi = fn.args[-2], fn.args[-1]
        inner = extent(grid[-1])
        extents = [extent(g) for g in grid[:-1]]
        rows = fn.append_basic_block("grid.row")
        row_body = fn.append_basic_block("grid.row.body")
        cols = fn.append_basic_block("grid.col")
        row_next = fn.append_basic_block("grid.row.next")
        done = fn.append_basic_block("grid.done")
        # ``lo`` de-flattened once; each later row steps the outer indices like an odometer
        start = [builder.urem(lo, inner)]
        rest = builder.udiv(lo, inner)
        for gc in reversed(extents):
            start.insert(1, builder.urem(rest, gc))
            rest = builder.udiv(rest, gc)
        entry = builder.block
        builder.branch(rows)

        builder.position_at_end(rows)
        flat = builder.phi(I64, name="flat")
        j0 = builder.phi(I64, name="j0")
        outer = [builder.phi(I64) for _ in extents]
        for phi, v in zip([flat, j0, *outer], [lo, *start], strict=True):
            phi.add_incoming(v, entry)
        builder.cbranch(builder.icmp_signed("<", flat, hi), row_body, done)

        builder.position_at_end(row_body)
        left = builder.add(builder.sub(hi, flat), j0, flags=["nsw"])
        jend = builder.select(builder.icmp_signed("<", left, inner), left, inner, name="jend")
        builder.branch(cols)

        builder.position_at_end(cols)
        j = builder.phi(I64, name="j")
        j.add_incoming(j0, row_body)
        body(builder, [*outer, j])
        j_next = builder.add(j, ir.Constant(I64, 1), flags=["nsw", "nuw"])
        latch = builder.block
        latch_branch = builder.cbranch(builder.icmp_signed("<", j_next, jend), cols, row_next)
        if not vectorize:
            latch_branch.set_metadata("llvm.loop", scalar_loop(fn.module))
        j.add_incoming(j_next, latch)

        builder.position_at_end(row_next)
        zero = ir.Constant(I64, 0)
        carry: ir.Value = ir.Constant(ir.IntType(1), 1)
        stepped = []
        for idx, gc in reversed(list(zip(outer, extents))):
            up = builder.add(idx, builder.zext(carry, I64), flags=["nsw", "nuw"])
            carry = builder.icmp_unsigned("==", up, gc)
            stepped.insert(0, builder.select(carry, zero, up))
        for phi, v in zip([flat, j0, *outer], [builder.add(flat, builder.sub(jend, j0), flags=["nsw"]), zero, *stepped],
                          strict=True):
            phi.add_incoming(v, row_next)
        builder.branch(rows)

        builder.position_at_end(done)
        builder.ret_void()

    def emit_artifact(self, module: llvm.ModuleRef) -> bytes:
        return self.target_machine.emit_object(module)
