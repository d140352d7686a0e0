"""llvmlite.ir helpers of the kernels built straight in LLVM IR (the int8 GEMM
and conv families): types, constants, loops, pointers, vector loads/stores.

    acc = counted_loop(b, 16, [zero], lambda b, k, c: [b.add(c[0], k)], "sum")
    acc = fma(b, splat(b, x, 16), w, acc)             # llvm.fma.v16f32
    v = load_vec(b, ptr, 16, valid=5)                 # lanes 0-4 read, the rest 0.0
    cols = transpose(b, rows)                         # 16 vectors of 16 lanes, transposed by shuffles
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


def internal_function(module: ir.Module, name: str, params: Sequence[tuple[str, ir.Type]]) -> ir.Function:
    """``define internal void @name(...) nounwind``, pointer parameters ``noalias``
    (a kernel's own helper, which LLVM may inline and specialize)."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [t for _, t in params]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for arg, (n, t) in zip(fn.args, params, strict=True):
        arg.name = n
        if t == PTR:
            arg.add_attribute("noalias")
    return fn


def byte_ptr(b: ir.IRBuilder, base: ir.Value, offset: ir.Value | int, inbounds: bool = True) -> ir.Value:
    """``base + offset`` bytes (``inbounds=False`` where a partial sum may point
    outside the buffer, e.g. before a row that padding skips)."""
    if isinstance(offset, int):
        if offset == 0:
            return base
        offset = i64(offset)
    return b.gep(base, [offset], inbounds=inbounds, source_etype=I8)


def gep(b: ir.IRBuilder, base: ir.Value, byte_offset: ir.Value | int) -> ir.Value:
    """``base + byte_offset`` bytes without ``inbounds`` (partial sums of the conv
    kernels may point before a row)."""
    return byte_ptr(b, base, byte_offset, inbounds=False)


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


def merge(b: ir.IRBuilder, *arms: tuple[Sequence[ir.Value], ir.Block]) -> list[ir.Value]:
    """Phis at the builder's block joining each arm's values (one list per predecessor block)."""
    out = []
    for values in zip(*(vs for vs, _ in arms), strict=True):
        p = b.phi(values[0].type)
        for v, (_, block) in zip(values, arms):
            p.add_incoming(v, block)
        out.append(p)
    return out


Body = Callable[[ir.IRBuilder, ir.Value, list[ir.Value]], list[ir.Value]]


def loop_id(module: ir.Module, *hints: str | ir.MDValue) -> ir.MDValue:
    """An ``llvm.loop`` ID of ``hints``: names of hints without operands
    (``llvm.loop.unroll.disable``) or nodes of :func:`loop_hint`. Attached to a loop's
    latch branch::

        br i1 %more, label %ci, label %ci.end, !llvm.loop !1
        !0 = !{!"llvm.loop.unroll.disable"}
        !1 = !{!1, !0}                                ; a loop ID names itself first"""
    nodes = [h if isinstance(h, ir.MDValue) else module.add_metadata([ir.MetaDataString(module, h)]) for h in hints]
    loop = module.add_metadata([ir.MetaDataString(module, f"tessera.loop.{len(module.metadata)}")])  # a new node
    loop.operands = (loop, *nodes)  # made to name itself (llvmlite has no constructor for a cycle)
    return loop


def loop_hint(module: ir.Module, name: str, value: bool) -> ir.MDValue:
    """A loop hint with a boolean operand, for :func:`loop_id`: ``!{!"<name>", i1 <value>}``."""
    return module.add_metadata([ir.MetaDataString(module, name), ir.Constant(I1, int(value))])


def counted_loop(b: ir.IRBuilder, count: int | ir.Value, carried: Sequence[ir.Value], body: Body, name: str,
                 hints: Sequence[str] = ()) -> list[ir.Value]:
    """Runs ``body(b, iv, carried) -> carried`` for ``iv`` in ``[0, count)``, the
    values threaded through phis; returns the final ones. A static count of
    0 or 1 emits no loop; a run-time count is guarded against 0. ``hints``:
    ``llvm.loop`` hints of the loop (:func:`loop_id`)."""
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
    latch_branch = b.cbranch(b.icmp_signed("<", nxt, bound), loop, done)
    if hints:
        latch_branch.set_metadata("llvm.loop", loop_id(b.module, *hints))
    b.position_at_end(done)
    if isinstance(count, int):
        return new
    return merge(b, (carried, pre), (new, latch))  # a run-time count may be 0


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
    then, merge_bb = fn.append_basic_block(name), fn.append_basic_block(f"{name}.end")
    pre = b.block
    b.cbranch(cond, then, merge_bb)
    b.position_at_end(then)
    new = body(b, list(carried))
    then_end = b.block
    b.branch(merge_bb)
    b.position_at_end(merge_bb)
    return merge(b, (list(carried), pre), (new, then_end))


def transpose(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The ``L x L`` matrix of ``L`` vectors of ``L`` lanes transposed: ``out[t][j] == rows[j][t]``.
    At each block size ``s`` (1, 2, 4, ...) every ``2s x 2s`` block swaps its off-diagonal
    ``s x s`` blocks: ``L * log2(L)`` shuffles (``vunpcklps``/``vshufps``/``vperm2f128`` on AVX2)."""
    n, s = len(rows), 1
    while s < n:
        new = list(rows)
        for r in range(n):
            if r & s:
                continue
            p = r | s
            keep = ir.Constant(vec(ir.IntType(32), n), [k if not k & s else n + (k ^ s) for k in range(n)])
            swap = ir.Constant(vec(ir.IntType(32), n), [k | s if not k & s else n + k for k in range(n)])
            new[r], new[p] = b.shuffle_vector(rows[r], rows[p], keep), b.shuffle_vector(rows[r], rows[p], swap)
        rows, s = new, 2 * s
    return rows
