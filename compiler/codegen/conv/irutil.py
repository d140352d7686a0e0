"""llvmlite helpers of the conv emitters (on top of the int8 GEMM's).

    acc = fma(b, splat(b, x, 16), w, acc)             # llvm.fma.v16f32
    v = masked_load(b, ptr, 16, valid=5)              # lanes 0-4 read, the rest 0.0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from tessera.compiler.codegen.int8_gemm.irutil import (  # noqa: F401  (re-exported)
    F32,
    I1,
    I32,
    I64,
    PTR,
    counted_loop,
    i64,
    intrinsic,
    splat,
    vec,
)


def gep(b: ir.IRBuilder, base: ir.Value, byte_offset: ir.Value | int) -> ir.Value:
    """``base + byte_offset`` (no ``inbounds``: partial sums may point before a row)."""
    if isinstance(byte_offset, int):
        if byte_offset == 0:
            return base
        byte_offset = i64(byte_offset)
    return b.gep(base, [byte_offset], source_etype=ir.IntType(8))


def fma(b: ir.IRBuilder, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
    t = x.type
    fn = intrinsic(b.module, f"llvm.fma.v{t.count}f32", t, [t, t, t])
    return b.call(fn, [x, y, z])


def lane_mask(lanes: int, valid: int) -> ir.Constant:
    return ir.Constant(vec(I1, lanes), [1 if i < valid else 0 for i in range(lanes)])


def load_vec(b: ir.IRBuilder, ptr: ir.Value, lanes: int, valid: int | None = None) -> ir.Value:
    """``lanes`` floats at ``ptr``; only the first ``valid`` read (the others 0.0) when given."""
    vt = vec(F32, lanes)
    if valid is None or valid >= lanes:
        return b.load(ptr, typ=vt, align=4)
    fn = intrinsic(b.module, f"llvm.masked.load.v{lanes}f32.p0", vt, [PTR, I32, vec(I1, lanes), vt])
    return b.call(fn, [ptr, ir.Constant(I32, 4), lane_mask(lanes, valid), ir.Constant(vt, None)])


def store_vec(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, valid: int | None = None) -> None:
    lanes = value.type.count
    if valid is None or valid >= lanes:
        b.store(value, ptr, align=4)
        return
    fn = intrinsic(b.module, f"llvm.masked.store.v{lanes}f32.p0", ir.VoidType(), [value.type, PTR, I32, vec(I1, lanes)])
    b.call(fn, [value, ptr, ir.Constant(I32, 4), lane_mask(lanes, valid)])


def guarded(b: ir.IRBuilder, cond: ir.Value, carried: Sequence[ir.Value],
            body: Callable[[ir.IRBuilder, list[ir.Value]], list[ir.Value]], name: str) -> list[ir.Value]:
    """``body(carried)`` where ``cond`` holds, else ``carried`` unchanged (merged by phis)."""
    fn = b.function
    then, merge = fn.append_basic_block(name), fn.append_basic_block(f"{name}.end")
    pre = b.block
    b.cbranch(cond, then, merge)
    b.position_at_end(then)
    new = body(b, list(carried))
    then_end = b.block
    b.branch(merge)
    b.position_at_end(merge)
    out = []
    for v0, v1 in zip(carried, new, strict=True):
        p = b.phi(v0.type)
        p.add_incoming(v0, pre)
        p.add_incoming(v1, then_end)
        out.append(p)
    return out
