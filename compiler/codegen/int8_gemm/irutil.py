"""Small llvmlite.ir helpers shared by the int8 GEMM emitters.

    acc = counted_loop(b, 16, [zero], lambda b, k, c: [b.add(c[0], k)], "sum")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

I1, I8, I16, I32, I64 = (ir.IntType(w) for w in (1, 8, 16, 32, 64))
F32 = ir.FloatType()
PTR = ir.PointerType()


def vec(t: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(t, n)


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def splat(b: ir.IRBuilder, x: ir.Value, n: int) -> ir.Value:
    """``<n x T>`` with every lane ``x``."""
    v = b.insert_element(ir.Constant(vec(x.type, n), None), x, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(vec(x.type, n), None), ir.Constant(vec(I32, n), [0] * n))


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """The declaration of a (non-overloaded) intrinsic, declared once per module."""
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, list(args)), name)


def byte_ptr(b: ir.IRBuilder, base: ir.Value, offset: ir.Value | int) -> ir.Value:
    """``base + offset`` bytes."""
    if isinstance(offset, int):
        if offset == 0:
            return base
        offset = i64(offset)
    return b.gep(base, [offset], inbounds=True, source_etype=I8)


def umin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def entry_alloca(b: ir.IRBuilder, t: ir.Type, n: int, align: int = 64) -> ir.Value:
    """A stack array allocated in the function's entry block (once per call)."""
    entry = b.function.entry_basic_block
    here = b.block
    with b.goto_block(entry):
        if entry.instructions:
            b.position_before(entry.instructions[0])
        slot = b.alloca(t, size=i64(n))
        slot.align = align
        slot.type = PTR  # opaque (llvmlite types it i32*): vectors and scalars are stored through it
    b.position_at_end(here)
    return slot


Body = Callable[[ir.IRBuilder, ir.Value, list[ir.Value]], list[ir.Value]]


def counted_loop(b: ir.IRBuilder, count: int | ir.Value, carried: Sequence[ir.Value], body: Body, name: str) -> list[ir.Value]:
    """Runs ``body(b, iv, carried) -> carried`` for ``iv`` in ``[0, count)``, the
    values threaded through phis; returns the final ones. A static count of
    0 or 1 emits no loop; a run-time count is guarded against 0."""
    carried = list(carried)
    if isinstance(count, int):
        if count <= 0:
            return carried
        if count == 1:
            return body(b, i64(0), carried)
    fn = b.function
    pre = b.block
    loop = fn.append_basic_block(name)
    done = fn.append_basic_block(f"{name}.end")
    if isinstance(count, int):
        b.branch(loop)
    else:
        b.cbranch(b.icmp_signed(">", count, i64(0)), loop, done)
    b.position_at_end(loop)
    iv = b.phi(I64, name=f"{name}.iv")
    iv.add_incoming(i64(0), pre)
    phis = []
    for v in carried:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    new = body(b, iv, list(phis))
    nxt = b.add(iv, i64(1), flags=["nuw", "nsw"])
    latch = b.block
    iv.add_incoming(nxt, latch)
    for p, v in zip(phis, new, strict=True):
        p.add_incoming(v, latch)
    bound = i64(count) if isinstance(count, int) else count
    b.cbranch(b.icmp_signed("<", nxt, bound), loop, done)
    b.position_at_end(done)
    if isinstance(count, int):
        return new
    # a run-time count may be 0: merge with the values from before the loop
    out = []
    for v0, v1 in zip(carried, new, strict=True):
        m = b.phi(v0.type)
        m.add_incoming(v0, pre)
        m.add_incoming(v1, latch)
        out.append(m)
    return out
