"""The GEMM epilogue, fused into the register tile's stores.

    s32:         out[m, n] = acc
    scale:       out[m, n] = float(acc) * a_scale[m] * b_scale[n]
    scale_bias:  out[m, n] = float(acc) * a_scale[m] * b_scale[n] + bias[n]

Operations and their order are torch eager's ``acc.float() * a_scale[:, None]
* b_scale[None, :] + bias`` (separate roundings, no FMA contraction), so the
float results match eager bit for bit. A full panel stores vectors; the last,
partial panel of N goes through a stack tile and a scalar loop over its
``nvalid`` columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tessera.compiler.codegen.irbuild import F32, I32, I64, byte_ptr, counted_loop, entry_alloca, i64, splat, vec
from tessera.compiler.targets.x86.int8_gemm.spec import Int8GemmSpec


@dataclass(frozen=True)
class TileOperands:
    """Pointers at the tile's corner: ``out[m0, n0]``, ``a_scale[m0]``,
    ``b_scale[n0]``, ``bias[n0]`` (unused ones are null), and the valid columns."""

    out: ir.Value
    a_scale: ir.Value
    b_scale: ir.Value
    bias: ir.Value
    nvalid: ir.Value


def _finish_value(b: ir.IRBuilder, spec: Int8GemmSpec, acc: ir.Value, a_s: ir.Value | None,
                  b_s: ir.Value | None, bias: ir.Value | None) -> ir.Value:
    if not spec.scaled:
        return acc
    ftype = vec(F32, acc.type.count) if isinstance(acc.type, ir.VectorType) else F32
    v = b.fmul(b.fmul(b.sitofp(acc, ftype), a_s), b_s)
    return b.fadd(v, bias) if spec.has_bias else v


def store_full(b: ir.IRBuilder, spec: Int8GemmSpec, rows: list[list[ir.Value]], t: TileOperands) -> None:
    """Stores ``rows[i][v]`` (``<L x i32>``, columns ``v*L..``) through the epilogue."""
    lanes = rows[0][0].type.count
    esize = 4
    col_vals = []
    for v in range(len(rows[0])):
        if spec.scaled:
            bs = b.load(byte_ptr(b, t.b_scale, v * lanes * esize), typ=vec(F32, lanes), align=4)
            bias = b.load(byte_ptr(b, t.bias, v * lanes * esize), typ=vec(F32, lanes), align=4) if spec.has_bias else None
        else:
            bs = bias = None
        col_vals.append((bs, bias))
    for i, row in enumerate(rows):
        a_s = splat(b, b.load(byte_ptr(b, t.a_scale, 4 * i), typ=F32, align=4), lanes) if spec.scaled else None
        for v, acc in enumerate(row):
            value = _finish_value(b, spec, acc, a_s, *col_vals[v])
            b.store(value, byte_ptr(b, t.out, (i * spec.N + v * lanes) * esize), align=4)


def store_partial(b: ir.IRBuilder, spec: Int8GemmSpec, rows: list[list[ir.Value]], t: TileOperands) -> None:
    """Stores the first ``t.nvalid`` columns of each row (the last panel of N)."""
    lanes = rows[0][0].type.count
    width = lanes * len(rows[0])
    tile = entry_alloca(b, I32, len(rows) * width)
    for i, row in enumerate(rows):
        for v, acc in enumerate(row):
            b.store(acc, byte_ptr(b, tile, 4 * (i * width + v * lanes)), align=4)

    def column(b: ir.IRBuilder, c: ir.Value, carried: list[ir.Value]) -> list[ir.Value]:
        c4 = b.mul(c, i64(4), flags=["nuw", "nsw"])
        if spec.scaled:
            bs = b.load(byte_ptr(b, t.b_scale, c4), typ=F32, align=4)
            bias = b.load(byte_ptr(b, t.bias, c4), typ=F32, align=4) if spec.has_bias else None
        for i in range(len(rows)):
            acc = b.load(byte_ptr(b, tile, b.add(c4, i64(4 * i * width))), typ=I32, align=4)
            if spec.scaled:
                a_s = b.load(byte_ptr(b, t.a_scale, 4 * i), typ=F32, align=4)
                acc = _finish_value(b, spec, acc, a_s, bs, bias)
            b.store(acc, byte_ptr(b, t.out, b.add(c4, i64(4 * i * spec.N))), align=4)
        return []

    counted_loop(b, t.nvalid, [], column, "epi.col")


def emit_epilogue(b: ir.IRBuilder, spec: Int8GemmSpec, rows: list[list[ir.Value]], t: TileOperands,
                  full: bool, partial: bool) -> None:
    """Stores the tile; ``full``/``partial`` say which panel kinds this GEMM has
    (both: a run-time branch on ``nvalid``). Ends with ``ret void``."""
    width = rows[0][0].type.count * len(rows[0])
    if full and partial:
        fn = b.function
        full_bb, part_bb, done = (fn.append_basic_block(n) for n in ("epi.full", "epi.partial", "epi.done"))
        b.cbranch(b.icmp_signed("==", t.nvalid, ir.Constant(I64, width)), full_bb, part_bb)
        b.position_at_end(full_bb)
        store_full(b, spec, rows, t)
        b.branch(done)
        b.position_at_end(part_bb)
        store_partial(b, spec, rows, t)
        b.branch(done)
        b.position_at_end(done)
    elif full:
        store_full(b, spec, rows, t)
    else:
        store_partial(b, spec, rows, t)
    b.ret_void()
