"""The conv kernel: a grid of output rows (and, dense, channel blocks) over the register tiles.

    void @conv2d_avx512_n1_128to128_64x64_k3x3_p1x1(ptr %x, ptr %w, [ptr %bias,] [ptr %res,] ptr %out,
                                                    i64 %lo, i64 %hi)

Kernel ABI of docs/kernel-ir.md: buffers ``x`` ``[N, C_in, (D,) H, W]`` with
channels-last strides (or contiguous ones: ``ConvSpec.input_layout``), the
packed weight (``packing``), ``bias [C_out]`` and ``residual`` (same shape and
strides as ``out``) when the spec has them, then ``out`` (channels-last, or
contiguous: ``ConvSpec.output_layout``);
``[lo, hi)`` is a range of the row-major grid that the runtime splits across
threads (all cores).

Dense convs: grid ``(groups * blocks, N, OD, OH)`` (or ``(N, OD, OH, groups *
blocks)`` when all packed weights fit L2: ``Tiling.rows_outer``). A grid point
computes one output row of one block of ``nr`` output channels: its static
edge tiles, then a loop over the dynamic tiles. Channel blocks outermost, one
thread's consecutive rows reuse one block of packed weights from L2 while the
input rows they share (``KD * KH`` per row) stream through L1; each tile keeps
its accumulators in registers over the whole window and all input channels
(or one cache block of them), and writes its output once.

Channelwise convs (``tiling``): grid ``(N, OD, OH)``. Depthwise, a grid point
walks the row's pixel tiles, and every channel block of a tile before the next
tile, so the tile's input pixels are read whole (all channels, contiguous).
Narrow groups walk channel blocks outermost: every block's ``k`` rotated weights
together would not stay in L1 (256 channels of 8 a group, 3x3: 74 KB).
"""

from __future__ import annotations

import math

from llvmlite import ir

from tessera.compiler.codegen.irbuild import F32, I64, PTR, counted_loop, entry_alloca, gep, i64
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.conv.microkernel import emit_tile, tile_name
from tessera.compiler.targets.x86.conv.pack_ir import emit_block_pack
from tessera.compiler.targets.x86.conv.packing import packed_shape
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling, WTile, choose_tiling
from tessera.dialects.dim_orders import identity, strides_for
from tessera.runtime.signature import BufferSpec, KernelSignature


def add_target_attributes(fn: ir.Function, target: LlvmTarget) -> None:
    """The target's function attributes (``"prefer-vector-width"="512"`` with AVX-512)."""
    for attr in target.function_attributes():
        fn.attributes.add(attr)
    for key, value in target.string_function_attributes().items():
        set.add(fn.attributes, f'"{key}"="{value}"')  # llvmlite only knows enum attributes


def grid(spec: ConvSpec, til: Tiling) -> tuple[int, ...]:
    od, oh, _ = spec.as3d("output_size")
    if til.channelwise:
        return (spec.batch, od, oh)
    blocks = spec.groups * til.blocks
    return (spec.batch, od, oh, blocks) if til.rows_outer else (blocks, spec.batch, od, oh)


def buffer_names(spec: ConvSpec) -> list[str]:
    return ["x", "w"] + (["bias"] if spec.bias else []) + (["res"] if spec.residual else []) + ["out"]


def buffer_specs(spec: ConvSpec) -> tuple[BufferSpec, ...]:
    til = choose_tiling(spec)
    if spec.packs_weight:
        wbuf = BufferSpec(spec.plain_weight_shape(), spec.plain_weight_strides(), "float32")
    else:
        ws = packed_shape(spec, til)
        wbuf = BufferSpec(ws, strides_for(ws, identity(len(ws))), "float32")
    xs, os_ = spec.input_shape(), spec.output_shape()
    bufs = [BufferSpec(xs, spec.input_strides(), "float32"), wbuf]
    if spec.bias:
        bufs.append(BufferSpec((spec.out_channels,), (1,), "float32"))
    if spec.residual:
        bufs.append(BufferSpec(os_, spec.output_strides(), "float32"))
    bufs.append(BufferSpec(os_, spec.output_strides(), "float32", is_output=True))
    return tuple(bufs)


def signature(spec: ConvSpec) -> KernelSignature:
    return KernelSignature(spec.kernel_name, grid(spec, choose_tiling(spec)), buffer_specs(spec))


def _runs(tiles: tuple[WTile, ...]) -> list[list[int]]:
    """Maximal runs of consecutive dynamic tiles (indices)."""
    runs: list[list[int]] = []
    for i, t in enumerate(tiles):
        if t.static:
            continue
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _tiles(b: ir.IRBuilder, til: Tiling, fns: dict[WTile, ir.Function], args: list[ir.Value],
           block: list[ir.Value]) -> None:
    """Every tile of one output row (``args``: the tile arguments before ``ow0``;
    ``block``: ``ci_n, first, last``)."""
    for t in til.row_tiles:
        if t.static:
            b.call(fns[t], [*args, i64(t.ow0), *block])
    for run in _runs(til.row_tiles):
        fn = fns[til.row_tiles[run[0]]]

        def one(b: ir.IRBuilder, t: ir.Value, _: list[ir.Value], first=run[0], fn=fn) -> list[ir.Value]:
            b.call(fn, [*args, b.mul(b.add(t, i64(first)), i64(til.mr)), *block])
            return []

        counted_loop(b, len(run), [], one, "tiles")


def _row(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, fns: dict[WTile, ir.Function], args: list[ir.Value]) -> None:
    """One output row, input-channel block by block (``args[0:2]``: ``x`` and ``w``
    at the row's first input channel)."""
    if til.channelwise or til.ci_blocks == 1:
        _tiles(b, til, fns, args, [i64(spec.cin_g), i64(1), i64(1)])
        return
    x, w, *rest = args

    def block(b: ir.IRBuilder, k: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        ci0 = b.mul(k, i64(til.ci_block))
        ci_n = b.select(b.icmp_unsigned("==", k, i64(til.ci_blocks - 1)),
                        i64(spec.cin_g - (til.ci_blocks - 1) * til.ci_block), i64(til.ci_block))
        first = b.zext(b.icmp_unsigned("==", k, i64(0)), I64)
        last = b.zext(b.icmp_unsigned("==", k, i64(til.ci_blocks - 1)), I64)
        xb, wb = gep(b, x, b.mul(ci0, i64(4 * spec.channel_stride))), gep(b, w, b.mul(ci0, i64(4 * til.nr)))
        _tiles(b, til, fns, [xb, wb, *rest], [ci_n, first, last])
        return []

    counted_loop(b, til.ci_blocks, [], block, "ci.block")


def conv_module(spec: ConvSpec, target: LlvmTarget) -> ir.Module:
    """The LLVM module of ``spec``'s kernel (for ``target``'s triple and data layout)."""
    til = choose_tiling(spec)
    module = ir.Module(name=spec.kernel_name)
    module.triple, module.data_layout = target.triple, target.data_layout
    per_block = spec.out_channels if til.channelwise else spec.cout_g
    last = per_block - (til.blocks - 1) * til.nr
    # valid channels of a block: nr, and fewer in the last block when nr does not divide them
    kinds = sorted({last} | ({til.nr} if til.blocks > 1 else set()))
    variants: dict[int, dict[WTile, ir.Function]] = {}
    for nvalid in kinds:
        seen: dict[WTile, ir.Function] = {}
        for t in til.row_tiles:
            key = t if t.static else WTile(0, t.width, False)
            if key not in seen:
                seen[key] = emit_tile(module, spec, til, t, nvalid, tile_name(spec.kernel_name, t, nvalid))
        variants[nvalid] = {t: seen[t if t.static else WTile(0, t.width, False)] for t in til.row_tiles}

    names = buffer_names(spec)
    fn, bufs = target.declare_kernel(module, spec.kernel_name, len(names))
    for arg, n in zip(bufs, names, strict=True):
        arg.name = n
    for f in module.functions:
        if not f.is_declaration:
            add_target_attributes(f, target)
    ptrs = dict(zip(names, bufs, strict=True))
    null = ir.Constant(PTR, None)
    D, H, W = spec.as3d("input_size")
    OD, OH, OW = spec.as3d("output_size")
    kvol = math.prod(spec.kernel)

    def block_args(b: ir.IRBuilder, x: ir.Value, orow: ir.Value, c0: ir.Value, wblk: ir.Value,
                   od: ir.Value, oh: ir.Value) -> list[ir.Value]:
        """The tile arguments before ``ow0``: ``x`` at the block's first input channel,
        ``out``/``res`` at the row's pixel 0 and the block's channel ``c0``."""
        at = b.mul(b.add(orow, b.mul(c0, i64(spec.out_channel_stride))), i64(4))
        out = gep(b, ptrs["out"], at)
        res = gep(b, ptrs["res"], at) if spec.residual else null
        bias = gep(b, ptrs["bias"], b.mul(c0, i64(4))) if spec.bias else null
        return [x, wblk, out, bias, res, od, oh]

    def channelwise_point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
        n, od, oh = idx
        ximg = b.mul(n, i64(D * H * W * spec.in_channels))
        orow = b.mul(b.add(b.mul(b.add(b.mul(n, i64(OD)), od), i64(OH)), oh), i64(OW * spec.out_channels))
        full = til.blocks if last == til.nr else til.blocks - 1

        def at_block(b: ir.IRBuilder, blk: ir.Value) -> list[ir.Value]:
            c0 = b.mul(blk, i64(til.nr))
            x = gep(b, ptrs["x"], b.mul(b.add(ximg, c0), i64(4)))
            return block_args(b, x, orow, c0, gep(b, ptrs["w"], b.mul(c0, i64(4))), od, oh)

        def each_block(b: ir.IRBuilder, body) -> None:
            """``body(b, blk, tile functions)`` for every channel block, the last one's own."""
            def one(b: ir.IRBuilder, blk: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
                body(b, blk, variants[til.nr])
                return []

            if full:
                counted_loop(b, full, [], one, "blocks")
            if full < til.blocks:
                body(b, i64(full), variants[last])

        whole = [i64(1)] * 3  # ci_n, first, last: no input-channel blocks
        if til.group_width > 1:
            # narrow groups: channel blocks outermost, one block's k rotated weights (k * taps
            # vectors) serve the row's tiles from L1
            each_block(b, lambda b, blk, fns: _tiles(b, til, fns, at_block(b, blk), whole))
            return

        # depthwise: pixel tiles outermost, the channel blocks of a tile inside: a tile's
        # input pixels are read whole (all channels, contiguous) while they are in L1
        def blocks(b: ir.IRBuilder, tile: WTile, ow0: ir.Value) -> None:
            each_block(b, lambda b, blk, fns: b.call(fns[tile], [*at_block(b, blk), ow0, *whole]))

        for t in til.row_tiles:
            if t.static:
                blocks(b, t, i64(t.ow0))
        for run in _runs(til.row_tiles):
            t0 = til.row_tiles[run[0]]

            def tile(b: ir.IRBuilder, k: ir.Value, _: list[ir.Value], first=run[0], t0=t0) -> list[ir.Value]:
                blocks(b, t0, b.mul(b.add(k, i64(first)), i64(til.mr)))
                return []

            counted_loop(b, len(run), [], tile, "tiles")

    def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
        if til.rows_outer:
            n, od, oh, blk = idx
        else:
            blk, n, od, oh = idx
        g = b.udiv(blk, i64(til.blocks))
        cob = b.urem(blk, i64(til.blocks))
        c0 = b.add(b.mul(g, i64(spec.cout_g)), b.mul(cob, i64(til.nr)))
        cin0 = b.mul(g, i64(spec.cin_g))
        wblk = packed_block(b, blk) if spec.packs_weight else gep(b, ptrs["w"], b.mul(blk, i64(4 * spec.cin_g * til.nr * kvol)))
        x = gep(b, ptrs["x"], b.mul(b.add(b.mul(n, i64(D * H * W * spec.in_channels)),
                                          b.mul(cin0, i64(spec.channel_stride))), i64(4)))
        orow = b.add(b.mul(n, i64(OD * OH * OW * spec.out_channels)),
                     b.mul(b.add(b.mul(od, i64(OH)), oh), i64(OW * spec.out_pixel_stride)))
        args = block_args(b, x, orow, c0, wblk, od, oh)
        if len(variants) == 1:
            (fns,) = variants.values()
            _row(b, spec, til, fns, args)
            return
        fnc = b.function
        tail, full, done = (fnc.append_basic_block(n) for n in ("block.last", "block.full", "block.done"))
        b.cbranch(b.icmp_unsigned("==", cob, i64(til.blocks - 1)), tail, full)
        b.position_at_end(tail)
        _row(b, spec, til, variants[last], args)
        b.branch(done)
        b.position_at_end(full)
        _row(b, spec, til, variants[til.nr], args)
        b.branch(done)
        b.position_at_end(done)

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if spec.packs_weight:  # one block of the packed weight on the stack, and which block it is
        stack = entry_alloca(b, F32, kvol * spec.cin_g * til.nr)
        held = entry_alloca(b, I64, 1)
        b.store(i64(-1), held)

    def packed_block(b: ir.IRBuilder, blk: ir.Value) -> ir.Value:
        """The stack's block, packed from the plain weight when the grid reaches another block
        (blocks outermost: once per block and thread)."""
        fnc = b.function
        pack, ready = fnc.append_basic_block("wpack"), fnc.append_basic_block("wpack.ready")
        b.cbranch(b.icmp_unsigned("!=", b.load(held, typ=I64), blk), pack, ready)
        b.position_at_end(pack)
        emit_block_pack(b, spec, til, ptrs["w"], stack, blk)
        b.store(blk, held)
        b.branch(ready)
        b.position_at_end(ready)
        return stack

    target.emit_grid(b, fn, grid(spec, til), channelwise_point if til.channelwise else point)
    return module
