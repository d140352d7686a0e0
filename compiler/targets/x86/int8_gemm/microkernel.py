"""The register tile: ``mr`` rows of A times one packed panel of B over all of K.

    void @<kernel>.mk6(ptr %a, ptr %panel, ptr %out, ptr %a_scale, ptr %b_scale, ptr %bias, i64 %nvalid)

``a`` points at row ``m0`` of A (rows ``K`` bytes apart), ``panel`` at one
packed panel (``packing``), the others at the tile's corner (``epilogue``).
The K loop walks the panel's K-groups in order, ``unroll`` groups per
iteration: per group, the path's B operands are loaded once and each row's
4-byte word of A is broadcast once and multiplied into that row's
accumulators (``mr * nv`` of them, phis that stay in registers). A final
K-group of 1-3 bytes (K % 4) is assembled byte by byte, so nothing past a row
of A is read; B's packing is zero there. For s8 A on a VNNI path the
accumulators start at ``-128 * rowsum(A[m])`` (see ``isa``).
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import (
    I8,
    I32,
    I64,
    PTR,
    byte_ptr,
    counted_loop,
    i64,
    internal_function,
    intrinsic,
    splat,
    vec,
)
from tessera.compiler.targets.x86.int8_gemm.epilogue import TileOperands, emit_epilogue
from tessera.compiler.targets.x86.int8_gemm.isa import IsaPath
from tessera.compiler.targets.x86.int8_gemm.spec import Int8GemmSpec

MK_ARGS = ("a", "panel", "out", "a_scale", "b_scale", "bias", "nvalid")


def _row_sums(b: ir.IRBuilder, spec: Int8GemmSpec, isa: IsaPath, a: ir.Value, mr: int) -> list[ir.Value]:
    """``sum_k A[i, k]`` (i32) of each row, A signed: whole vectors through the
    path's byte sum, the rest byte by byte."""
    chunk = 4 * isa.lanes
    zero = ir.Constant(isa.acc_type, None)

    def vectors(b: ir.IRBuilder, c: ir.Value, sums: list[ir.Value]) -> list[ir.Value]:
        off = b.mul(c, i64(chunk), flags=["nuw", "nsw"])
        return [isa.sum_bytes(b, s, b.load(byte_ptr(b, a, b.add(off, i64(i * spec.K))), typ=vec(I8, chunk), align=1))
                for i, s in enumerate(sums)]

    sums = counted_loop(b, spec.K // chunk, [zero] * mr, vectors, "rowsum")
    reduce = intrinsic(b.module, f"llvm.vector.reduce.add.v{isa.lanes}i32", I32, [isa.acc_type])
    totals = [b.call(reduce, [s]) for s in sums]
    start = spec.K // chunk * chunk

    def scalars(b: ir.IRBuilder, k: ir.Value, tot: list[ir.Value]) -> list[ir.Value]:
        return [b.add(t, b.sext(b.load(byte_ptr(b, a, b.add(k, i64(i * spec.K + start))), typ=I8, align=1), I32))
                for i, t in enumerate(tot)]

    return counted_loop(b, spec.K - start, totals, scalars, "rowsum.tail")


def _a_word(b: ir.IRBuilder, spec: Int8GemmSpec, a: ir.Value, row: int, group: ir.Value | int) -> ir.Value:
    """A[row, 4g:4g+4] as an i32 (little endian), a whole word or the K % 4 tail."""
    if isinstance(group, int):
        base = row * spec.K + 4 * group
        nbytes = min(4, spec.K - 4 * group)
        if nbytes < 4:
            word = ir.Constant(I32, 0)
            for j in range(nbytes):
                byte = b.zext(b.load(byte_ptr(b, a, base + j), typ=I8, align=1), I32)
                word = b.or_(word, b.shl(byte, ir.Constant(I32, 8 * j)) if j else byte)
            return word
        return b.load(byte_ptr(b, a, base), typ=I32, align=1)
    off = b.add(b.mul(group, i64(4), flags=["nuw", "nsw"]), i64(row * spec.K))
    return b.load(byte_ptr(b, a, off), typ=I32, align=1)


def emit_microkernel(module: ir.Module, spec: Int8GemmSpec, isa: IsaPath, mr: int, name: str,
                     full: bool, partial: bool, unroll: int = 4) -> ir.Function:
    """Defines ``@name``, the ``mr``-row tile (see the module docstring)."""
    fn = internal_function(module, name, list(zip(MK_ARGS, [PTR] * 6 + [I64], strict=True)))
    a, panel, out, a_scale, b_scale, bias, nvalid = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    per_row = isa.accumulators_per_row()
    if isa.needs_rowsum(spec.a_signed):
        starts = [splat(b, b.mul(s, ir.Constant(I32, -128)), isa.lanes) for s in _row_sums(b, spec, isa, a, mr)]
        accs = [starts[i] for i in range(mr) for _ in range(per_row)]
    else:
        accs = [ir.Constant(isa.acc_type, None)] * (mr * per_row)

    group_bytes = isa.nr * 4

    def step(b: ir.IRBuilder, g: ir.Value | int, accs: list[ir.Value]) -> list[ir.Value]:
        off = g * group_bytes if isinstance(g, int) else b.mul(g, i64(group_bytes), flags=["nuw", "nsw"])
        b_ops = isa.b_operands(b, byte_ptr(b, panel, off))
        new = list(accs)
        for i in range(mr):
            a_op = isa.a_operand(b, _a_word(b, spec, a, i, g), spec.a_signed)
            for s in range(per_row):
                new[i * per_row + s] = isa.madd(b, new[i * per_row + s], a_op, b_ops[s], spec.a_signed)
        return new

    full_groups = spec.K // 4

    def unrolled(b: ir.IRBuilder, it: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        g0 = b.mul(it, i64(unroll), flags=["nuw", "nsw"])
        for u in range(unroll):
            accs = step(b, b.add(g0, i64(u), flags=["nuw", "nsw"]) if u else g0, accs)
        return accs

    accs = counted_loop(b, full_groups // unroll, accs, unrolled, "kloop")
    for g in range(full_groups // unroll * unroll, full_groups):
        accs = step(b, g, accs)
    if spec.K % 4:
        accs = step(b, full_groups, accs)

    rows = [isa.finish(b, accs[i * per_row:(i + 1) * per_row]) for i in range(mr)]
    emit_epilogue(b, spec, rows, TileOperands(out, a_scale, b_scale, bias, nvalid), full, partial)
    return fn
