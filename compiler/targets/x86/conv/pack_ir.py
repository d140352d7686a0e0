"""The IR that packs conv weights: a block's channels gathered into vectors.

    gather_block(b, w, packed, first, step, out, til, nvalid)   # packed[out:out+nr] = w[first + j*step]
    gather_block(b, w, packed, first, (0, 9, ...), out, til, n) # packed[out+j] = w[first + offsets[j]]
    emit_block_pack(b, spec, til, w, stack, gb)                  # one channel block of the packed layout
    first, step = weight_source(b, spec, row, ci, tap)           # where W[row, ci, tap] is in the plain weight

Shared by the packing kernel (``pack_kernel``: the whole weight, before the conv)
and a conv kernel that packs its own weight a block at a time (``kernel``,
``ConvSpec.packs_weight``). The layout is ``packing``'s.
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import (
    F32,
    I64,
    PTR,
    counted_loop,
    gep,
    i64,
    intrinsic,
    splat,
    transpose,
    umin,
    vec,
)
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling


def gather_block(b: ir.IRBuilder, src: ir.Value, dst: ir.Value, first: ir.Value, step: int | tuple[int, ...],
                 out: ir.Value, til: Tiling, nvalid: ir.Value) -> None:
    """``dst[out:out+nr] = src[first + j*step]`` for ``j < nvalid``, zeros after (``step`` a
    tuple: ``src[first + step[j]]``, channel ``j``'s own offset); a whole block is ``nr / lanes``
    vector gathers (``vgatherqps``) and stores."""
    nr, lanes = til.nr, til.lanes
    offset = (lambda j: j * step) if isinstance(step, int) else step.__getitem__
    fn = b.function
    whole, part, done = (fn.append_basic_block(n) for n in ("pack.whole", "pack.part", "pack.done"))
    b.cbranch(b.icmp_signed("==", nvalid, i64(nr)), whole, part)

    b.position_at_end(whole)
    index, f32s = vec(I64, lanes), vec(F32, lanes)
    ptrs_type, mask = vec(PTR, lanes), ir.Constant(vec(ir.IntType(1), lanes), [1] * lanes)
    gather = intrinsic(b.module, f"llvm.masked.gather.v{lanes}f32.v{lanes}p0", f32s,
                       [ptrs_type, ir.IntType(32), mask.type, f32s])
    base = splat(b, b.add(b.ptrtoint(src, I64), b.mul(first, i64(4))), lanes)
    for c in range(nr // lanes):
        offsets = ir.Constant(index, [4 * offset(c * lanes + j) for j in range(lanes)])
        ptrs = b.inttoptr(b.add(base, offsets), ptrs_type)
        v = b.call(gather, [ptrs, ir.Constant(ir.IntType(32), 4), mask, ir.Constant(f32s, None)])
        b.store(v, gep(b, dst, b.mul(b.add(out, i64(c * lanes)), i64(4))), align=4)
    b.branch(done)

    b.position_at_end(part)
    b.store(ir.Constant(vec(F32, nr), None), gep(b, dst, b.mul(out, i64(4))), align=4)

    table = None if isinstance(step, int) else ir.Constant(vec(I64, nr), list(step))

    def one(b: ir.IRBuilder, j: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        at = b.mul(j, i64(step)) if table is None else b.extract_element(table, j)
        x = b.load(gep(b, src, b.mul(b.add(first, at), i64(4))), typ=F32, align=4)
        b.store(x, gep(b, dst, b.mul(b.add(out, j), i64(4))), align=4)
        return []

    counted_loop(b, nvalid, [], one, "pack.chan")
    b.branch(done)
    b.position_at_end(done)


def weight_source(b: ir.IRBuilder, spec: ConvSpec, row: ir.Value, ci: ir.Value, tap: ir.Value
                  ) -> tuple[ir.Value, int]:
    """Where the plain weight holds ``W[row, ci, tap]`` and how far apart output channels
    ``row, row + 1, ...`` are (``gather_block``'s ``first`` and ``step``): ``cin_g * taps``
    in a contiguous weight; ``taps`` in a ``flipped_weight`` (``w[ci, row, K-1-tap]``; of
    group ``g``, ``w[g * cin_g + ci, row - g * cout_g, K-1-tap]``)."""
    taps = spec.kernel_volume
    if spec.flipped_weight:
        at = b.add(b.mul(ci, i64(spec.cout_g)), row)
        if spec.groups > 1:  # + g * cout_g * (cin_g - 1), g = row // cout_g
            at = b.add(at, b.mul(b.udiv(row, i64(spec.cout_g)), i64(spec.cout_g * (spec.cin_g - 1))))
        return b.add(b.mul(at, i64(taps)), b.sub(i64(taps - 1), tap)), taps
    return b.add(b.mul(b.add(b.mul(row, i64(spec.cin_g)), ci), i64(taps)), tap), spec.cin_g * taps


def emit_block_pack(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, src: ir.Value, dst: ir.Value, gb: ir.Value) -> None:
    """``dst[tap, ci, :] = packed[gb, tap, ci, :]``: one channel block of a dense conv's packed
    weight from the plain one (``src``, stored ``spec.weight_layout``): what a kernel that packs
    its weight (``ConvSpec.packs_weight``) runs as it reaches a block. A block of ``nr`` whole
    channels is read row by row (:func:`_transpose_rows`, :func:`_copy_rows`); the last,
    partial block, and every block of a ``flipped_weight`` (its channels ``taps`` floats
    apart), gathers its channels (:func:`_gather_channels`)."""
    g, blk = b.udiv(gb, i64(til.blocks)), b.urem(gb, i64(til.blocks))
    co0 = b.mul(blk, i64(til.nr))
    nvalid = umin(b, i64(til.nr), b.sub(i64(spec.cout_g), co0))
    row = b.add(b.mul(g, i64(spec.cout_g)), co0)
    if spec.flipped_weight:
        _gather_channels(b, spec, til, src, dst, row, nvalid)
        return
    fn = b.function
    whole, part, done = (fn.append_basic_block(n) for n in ("wpack.rows", "wpack.gather", "wpack.end"))
    b.cbranch(b.icmp_signed("==", nvalid, i64(til.nr)), whole, part)
    b.position_at_end(whole)
    (_copy_rows if spec.weight_layout == "dhwio" else _transpose_rows)(b, spec, til, src, dst, row)
    b.branch(done)
    b.position_at_end(part)
    _gather_channels(b, spec, til, src, dst, row, nvalid)
    b.branch(done)
    b.position_at_end(done)


def _gather_channels(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, src: ir.Value, dst: ir.Value, row: ir.Value,
                     nvalid: ir.Value) -> None:
    """A block of ``nvalid`` channels, zeros after: per ``(tap, ci)`` its channels gathered
    (:func:`weight_source`), or adjacent (``dhwio``)."""
    taps, cin_g, nr = spec.kernel_volume, spec.cin_g, til.nr
    if spec.weight_layout == "dhwio":
        def point(b: ir.IRBuilder, f: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            gather_block(b, src, dst, b.add(b.mul(f, i64(spec.out_channels)), row), 1, b.mul(f, i64(nr)), til, nvalid)
            return []

        counted_loop(b, taps * cin_g, [], point, "pack.point")
        return

    def channel(b: ir.IRBuilder, ci: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        def tap(b: ir.IRBuilder, t: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            first, step = weight_source(b, spec, row, ci, t)
            gather_block(b, src, dst, first, step, b.mul(b.add(b.mul(t, i64(cin_g)), ci), i64(nr)), til, nvalid)
            return []

        counted_loop(b, taps, [], tap, "pack.tap")
        return []

    counted_loop(b, cin_g, [], channel, "pack.ci")


def _copy_rows(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, src: ir.Value, dst: ir.Value, row: ir.Value) -> None:
    """A whole block from a weight stored ``dhwio``: per ``(tap, ci)`` its ``nr`` channels
    are adjacent (``row`` the first), copied as ``nv`` vectors."""
    f32s = vec(F32, til.lanes)

    def point(b: ir.IRBuilder, f: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        at = b.add(b.mul(f, i64(spec.out_channels)), row)
        for v in range(til.nv):
            x = b.load(gep(b, src, b.mul(b.add(at, i64(v * til.lanes)), i64(4))), typ=f32s, align=4)
            b.store(x, gep(b, dst, b.mul(b.add(b.mul(f, i64(til.nr)), i64(v * til.lanes)), i64(4))), align=4 * til.lanes)
        return []

    counted_loop(b, spec.kernel_volume * spec.cin_g, [], point, "wpack.copy")


def _transpose_rows(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, src: ir.Value, dst: ir.Value, row: ir.Value) -> None:
    """A whole block from rows ``row .. row + nr`` of the plain weight, each read contiguously
    (``cin_g * taps`` floats, input channel major): ``lanes`` floats of ``lanes`` rows at a time,
    transposed in registers into ``lanes`` channel vectors, each stored at its ``(tap, ci)``;
    the last ``cin_g * taps % lanes`` floats of the rows one by one. Gathers of floats a row
    apart ran at 0.85 GB/s on 12 KB rows (Zen 3): the hardware prefetchers do not follow them."""
    taps, cin_g, nr, lanes = spec.kernel_volume, spec.cin_g, til.nr, til.lanes
    length = cin_g * taps
    f32s = vec(F32, lanes)
    base = b.mul(row, i64(length))

    def store_at(b: ir.IRBuilder, f: ir.Value, j0: int, value: ir.Value, align: int) -> None:
        ci, tap = b.udiv(f, i64(taps)), b.urem(f, i64(taps))
        at = b.add(b.mul(b.add(b.mul(tap, i64(cin_g)), ci), i64(nr)), i64(j0))
        b.store(value, gep(b, dst, b.mul(at, i64(4))), align=align)

    def chunk(b: ir.IRBuilder, c: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        f0 = b.mul(c, i64(lanes))
        for v in range(til.nv):
            rows = [b.load(gep(b, src, b.mul(b.add(b.add(base, i64((v * lanes + j) * length)), f0), i64(4))),
                           typ=f32s, align=4) for j in range(lanes)]
            for t, col in enumerate(transpose(b, rows)):
                store_at(b, b.add(f0, i64(t)), v * lanes, col, 4 * lanes)
        return []

    counted_loop(b, length // lanes, [], chunk, "wpack.chunk")
    for f in range(length - length % lanes, length):
        for j in range(nr):
            x = b.load(gep(b, src, b.mul(b.add(base, i64(j * length + f)), i64(4))), typ=F32, align=4)
            store_at(b, i64(f), j, x, 4)
