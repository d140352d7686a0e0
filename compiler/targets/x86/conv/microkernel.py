"""The register tiles: ``width`` output pixels of one row x one block of output channels.

    void @<kernel>.tile<ow0|dyn>w<width>c<nvalid>(ptr %x, ptr %w, ptr %out, ptr %bias, ptr %res,
                                                  i64 %od, i64 %oh, i64 %ow0)

``x`` points at the image's first input channel of the group (dense) or at
the block's first channel (channelwise), ``w`` at the block's packed weights,
``out``/``res`` at the row's pixel 0 and the block's first channel. The taps
loop over ``kd``, ``kh`` at run time (rows outside the input are skipped:
padding along D and H costs nothing) and over ``kw`` unrolled; a static tile
(``ow0`` a constant) drops the pixels whose ``kw`` tap falls in the left or
right padding at compile time.

Dense (per tap, ``C_in/groups`` steps, unrolled by 4): ``nv`` weight vectors
loaded (and, for a weight over L2, the next input-channel block's prefetched:
``_prefetch_ahead``), each pixel's input broadcast (an embedded ``{1to16}`` memory
operand with AVX-512) and ``llvm.fma``-ed into its ``nv`` accumulators::

    vfmadd231ps 384(%rdi,%rax,4){1to16}, %zmm30, %zmm5

Depthwise (per tap): ``nv`` weight vectors, each pixel's ``nv`` input vectors
(channels are the vector lanes), one FMA each. Narrow groups of ``k`` channels
(channelwise, ``tiling``): each pixel's input vector (``lanes // k`` whole
groups) times the tap's ``k`` rotated weight vectors (``packing``) into ``k``
accumulators; lane ``l`` of accumulator ``r`` holds output channel
``l // k * k + (l % k + r) % k``, so after the window each accumulator is
rotated back within its groups (one ``vpermps``) and the ``k`` are summed::

    out[l] = sum_r acc_r[l // k * k + (l % k - r) % k]

Every lane does useful work (a dense tile of one vector would fill ``k`` of
``lanes``), and the ``k - 1`` permutes a pixel come once per tile, not per tap.
Accumulators are phis that stay in registers (``mr * nv`` of them,
``ConvIsa.max_pixels``; ``mr * k`` channelwise).
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import (
    F32,
    I64,
    PTR,
    counted_loop,
    fma,
    gep,
    guarded,
    i64,
    internal_function,
    intrinsic,
    load_vec,
    splat,
    vec,
)
from tessera.compiler.targets.x86.conv.epilogue import load_tile, store_raw, store_tile
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling, WTile

TILE_ARGS = ("x", "w", "out", "bias", "res", "od", "oh", "ow0", "ci_n", "first", "last")
CI_UNROLL = 4
ROLLED_TAP_CHANNELS = 16
"""Dense convs of fewer input channels a group loop over a row's taps (``_rolled_taps``)."""


def tile_name(kernel: str, tile: WTile, nvalid: int) -> str:
    where = f"at{tile.ow0}" if tile.static else "dyn"
    return f"{kernel}.tile_{where}_w{tile.width}_c{nvalid}"


def _valid_pixels(spec: ConvSpec, tile: WTile, kw: int) -> list[int]:
    _, _, w = spec.as3d("input_size")
    sw, pw, dw = spec.as3d("stride")[2], spec.as3d("padding")[2], spec.as3d("dilation")[2]
    if not tile.static:
        return list(range(tile.width))
    return [p for p in range(tile.width) if 0 <= (tile.ow0 + p) * sw - pw + kw * dw < w]


def emit_tile(module: ir.Module, spec: ConvSpec, til: Tiling, tile: WTile, nvalid: int, name: str) -> ir.Function:
    """Defines ``@name``: the tile ``tile`` of a row, ``nvalid`` valid channels of the block."""
    fn = internal_function(module, name, list(zip(TILE_ARGS, [PTR] * 5 + [I64] * 6, strict=True)))
    x, w, out, bias, res, od, oh, ow0_arg, ci_n, first, last = fn.args
    blocked = not til.channelwise and til.ci_blocks > 1
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    lanes = til.lanes
    nvec = -(-nvalid // lanes)
    vt = vec(F32, lanes)
    D, H, W = spec.as3d("input_size")
    KD, KH, KW = spec.as3d("kernel")
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = spec.as3d("stride"), spec.as3d("padding"), spec.as3d("dilation")
    cin = spec.in_channels
    ow0 = i64(tile.ow0) if tile.static else ow0_arg
    # input pixel of the tile's pixel 0 for kw = 0 (may be negative: -pw at the left edge)
    iw0 = b.sub(b.mul(ow0, i64(sw)), i64(pw))

    def taps_of_row(b: ir.IRBuilder, accs: list[ir.Value], row: ir.Value, kd: ir.Value, kh: ir.Value) -> list[ir.Value]:
        """Every ``kw`` tap of input row ``row`` (pixel index of the row's first pixel)."""
        tap0 = b.mul(b.add(b.mul(kd, i64(KH)), kh), i64(KW))

        def tap(b: ir.IRBuilder, kw: ir.Value | int, accs: list[ir.Value], pixels: list[int]) -> list[ir.Value]:
            kwv = i64(kw) if isinstance(kw, int) else kw
            first = b.add(b.add(row, iw0), b.mul(kwv, i64(dw)))  # input pixel of tile pixel 0 at this tap
            xb = gep(b, x, b.mul(first, i64(4 * spec.pixel_stride)))
            t = b.add(tap0, kwv)
            if til.channelwise:
                wtap = gep(b, w, b.mul(t, i64(4 * til.group_width * til.blocks * til.nr)))
                tap_fn = _depthwise_tap if til.group_width == 1 else _grouped_tap
                return tap_fn(b, til, accs, xb, wtap, pixels, nvec, nvalid, sw * cin)
            return _dense_tap(b, spec, til, accs, xb, gep(b, w, b.mul(t, i64(4 * spec.cin_g * til.nr))),
                              pixels, nvec, sw * spec.pixel_stride, ci_n if blocked else spec.cin_g,
                              _prefetch_ahead(spec, til))

        if _rolled_taps(spec, til):
            for kw0, kw1, pixels in _tap_runs(spec, tile):
                accs = counted_loop(b, kw1 - kw0, accs, lambda b, i, a, kw0=kw0, px=pixels:
                                    tap(b, b.add(i, i64(kw0)), a, px), "kw", ("llvm.loop.unroll.disable",))
            return accs
        for kw in range(KW):
            pixels = _valid_pixels(spec, tile, kw)
            if pixels:
                accs = tap(b, kw, accs, pixels)
        return accs

    def kh_loop(b: ir.IRBuilder, kd: ir.Value, id_: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        def kh_body(b: ir.IRBuilder, kh: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
            ih = b.add(b.sub(b.mul(oh, i64(sh)), i64(ph)), b.mul(kh, i64(dh)))
            row = b.mul(b.add(b.mul(id_, i64(H)), ih), i64(W))
            return guarded(b, b.icmp_unsigned("<", ih, i64(H)), accs, lambda b, a: taps_of_row(b, a, row, kd, kh), "kh.in")

        return counted_loop(b, KH, accs, kh_body, "kh")

    def kd_body(b: ir.IRBuilder, kd: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        id_ = b.add(b.sub(b.mul(od, i64(sd)), i64(pd)), b.mul(kd, i64(dd)))
        return guarded(b, b.icmp_unsigned("<", id_, i64(D)), accs, lambda b, a: kh_loop(b, kd, id_, a), "kd.in")

    pix = b.mul(ow0, i64(4 * spec.out_pixel_stride))
    out_tile = gep(b, out, pix)
    res_tile = gep(b, res, pix) if spec.residual else res
    if spec.residual and spec.out_channel_stride == 1:  # a pixel's channels are adjacent
        _prefetch_residual(b, spec, tile.width, nvalid, res_tile, last if blocked else None)
    accs = [ir.Constant(vt, None)] * (tile.width * nvec * til.group_width)
    if blocked:  # later input-channel blocks continue from the partial sums in out
        accs = guarded(b, b.icmp_unsigned("==", first, i64(0)), accs,
                       lambda b, _: load_tile(b, spec, out_tile, tile.width, nvec, lanes, nvalid), "resume")
    accs = counted_loop(b, KD, accs, kd_body, "kd")
    if til.group_width > 1:
        accs = [_unrotate(b, til, accs[p * til.group_width:(p + 1) * til.group_width]) for p in range(tile.width)]
    rows = [accs[p * nvec:(p + 1) * nvec] for p in range(tile.width)]
    if not blocked:
        store_tile(b, spec, rows, out_tile, bias, res_tile, nvalid)
        b.ret_void()
        return fn
    epi, partial = fn.append_basic_block("epilogue"), fn.append_basic_block("partial")
    b.cbranch(b.icmp_unsigned("!=", last, i64(0)), epi, partial)
    b.position_at_end(epi)
    store_tile(b, spec, rows, out_tile, bias, res_tile, nvalid)
    b.ret_void()
    b.position_at_end(partial)
    store_raw(b, spec, rows, out_tile, nvalid)
    b.ret_void()
    return fn


def _rolled_taps(spec: ConvSpec, til: Tiling) -> bool:
    """Whether a row's ``kw`` taps are loops LLVM leaves rolled (runs of the taps that the
    same pixels read, ``_tap_runs``) rather than unrolled: dense convs of few input channels
    a group. Unrolled, a stem's 3-channel taps were one block to LLVM, which saw that pixel
    ``p`` at tap ``kw + stride`` reads what pixel ``p + 1`` read at ``kw``, kept each
    broadcast live from one to the other and spilled them: 7x7 3 -> 64 at 224x224, stride 2,
    ran at 83 GFLOP/s against oneDNN's 154, rolled at 169 (AVX-512, 1 thread, session 32)."""
    return not til.channelwise and spec.cin_g < ROLLED_TAP_CHANNELS


def _tap_runs(spec: ConvSpec, tile: WTile) -> list[tuple[int, int, list[int]]]:
    """``(kw0, kw1, pixels)``: the runs of taps ``kw0 <= kw < kw1`` that the same pixels of
    ``tile`` read (all of them in a dynamic tile; fewer where a static one meets the padding),
    each a loop over its taps (``_rolled_taps``)."""
    runs: list[tuple[int, int, list[int]]] = []
    for kw in range(spec.as3d("kernel")[2]):
        pixels = _valid_pixels(spec, tile, kw)
        if runs and runs[-1][1] == kw and runs[-1][2] == pixels:
            runs[-1] = (runs[-1][0], kw + 1, pixels)
        elif pixels:
            runs.append((kw, kw + 1, pixels))
    return runs


def _prefetch_residual(b: ir.IRBuilder, spec: ConvSpec, width: int, nvalid: int, res_tile: ir.Value,
                       last: ir.Value | None) -> None:
    """Prefetch (``prefetcht0``) the residual lines the tile's epilogue adds, before its
    window: they arrive while the FMAs run, where the epilogue waited for each. ``last``: the
    input-channel block flag (blocked tiles read the residual in the last block only).
    ResNet-50's expanding 1x1 convs with their shortcut and ReLU, kernel alone, Zen 4, 1
    thread, hot caches (``BENCHMARKS.md``, session 49): 64 -> 256 at 56x56 1.14-1.23x,
    256 -> 1024 at 14x14 1.03-1.10x."""
    i32 = ir.IntType(32)
    prefetch = intrinsic(b.module, "llvm.prefetch.p0", ir.VoidType(), [PTR] + [i32] * 3)

    def lines(b: ir.IRBuilder) -> None:
        for p in range(width):
            for line in range(0, 4 * nvalid, 64):
                at = gep(b, res_tile, 4 * p * spec.out_pixel_stride + line)
                b.call(prefetch, [at, *(ir.Constant(i32, a) for a in (0, 3, 1))])

    if last is None:
        lines(b)
        return
    fn = b.function
    then, done = fn.append_basic_block("res.prefetch"), fn.append_basic_block("res.prefetched")
    b.cbranch(b.icmp_unsigned("!=", last, i64(0)), then, done)
    b.position_at_end(then)
    lines(b)
    b.branch(done)
    b.position_at_end(done)


def _prefetch_ahead(spec: ConvSpec, til: Tiling) -> int | None:
    """Bytes ahead of the weights a dense tile reads that it prefetches (``prefetcht1``): the next
    input-channel block's, where the packed weight is read from memory on every call (over L2:
    ``Tiling.rows_outer`` False), else None. The first tile of a row that reaches a block pulls
    the next one into cache as it computes; the others find it there. Alone with its weight
    in cache ResNet-50's 2048 -> 512 1x1 conv at 7x7 ran 0.67 ms, with a cold weight 0.97 (the
    4 MB read at 13 GB/s, not overlapped), with this prefetch 0.78-0.83 (three strided convs of
    the stage likewise: 12-16% less); prefetching two or three blocks ahead, or into L1, measured
    the same, and prefetching each next block whole before its tiles ran did not help (Xeon,
    AVX-512, 1 thread, session 31)."""
    if til.rows_outer or spec.packs_weight:
        return None
    return til.ci_block * til.nr * 4


def _dense_tap(b: ir.IRBuilder, spec: ConvSpec, til: Tiling, accs: list[ir.Value], xb: ir.Value, wb: ir.Value,
               pixels: list[int], nvec: int, pixel_stride: int, cin: int | ir.Value,
               prefetch_ahead: int | None = None) -> list[ir.Value]:
    """One tap over ``cin`` input channels (``pixel_stride`` floats between pixels), prefetching
    the weights ``prefetch_ahead`` bytes on."""
    lanes, nr = til.lanes, til.nr
    i32 = ir.IntType(32)

    def step(b: ir.IRBuilder, ci: ir.Value | int, accs: list[ir.Value]) -> list[ir.Value]:
        ci = i64(ci) if isinstance(ci, int) else ci
        wrow = gep(b, wb, b.mul(ci, i64(4 * nr)))
        wv = [load_vec(b, gep(b, wrow, 4 * v * lanes), lanes) for v in range(nvec)]
        if prefetch_ahead is not None:  # read, locality 2 (prefetcht1), data
            prefetch = intrinsic(b.module, "llvm.prefetch.p0", ir.VoidType(), [PTR] + [i32] * 3)
            for line in range(0, 4 * nr, 64):
                b.call(prefetch, [gep(b, wrow, prefetch_ahead + line), *(ir.Constant(i32, a) for a in (0, 2, 1))])
        xc = gep(b, xb, b.mul(ci, i64(4 * spec.channel_stride)))
        new = list(accs)
        for p in pixels:
            s = splat(b, b.load(gep(b, xc, 4 * p * pixel_stride), typ=F32, align=4), lanes)
            for v in range(nvec):
                new[p * nvec + v] = fma(b, s, wv[v], new[p * nvec + v])
        return new

    unroll = CI_UNROLL if not isinstance(cin, int) or cin >= CI_UNROLL else 1

    def unrolled(b: ir.IRBuilder, it: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        c0 = b.mul(it, i64(unroll))
        for u in range(unroll):
            accs = step(b, b.add(c0, i64(u)) if u else c0, accs)
        return accs

    if isinstance(cin, int):
        accs = counted_loop(b, cin // unroll, accs, unrolled, "ci")
        for ci in range(cin // unroll * unroll, cin):
            accs = step(b, ci, accs)
        return accs
    accs = counted_loop(b, b.udiv(cin, i64(unroll)), accs, unrolled, "ci")
    done = b.mul(b.udiv(cin, i64(unroll)), i64(unroll))
    return counted_loop(b, b.urem(cin, i64(unroll)), accs, lambda b, c, a: step(b, b.add(done, c), a), "ci.rest")


def _depthwise_tap(b: ir.IRBuilder, til: Tiling, accs: list[ir.Value], xb: ir.Value, wb: ir.Value,
                   pixels: list[int], nvec: int, nvalid: int, pixel_stride: int) -> list[ir.Value]:
    lanes = til.lanes
    wv = [load_vec(b, gep(b, wb, 4 * v * lanes), lanes) for v in range(nvec)]
    new = list(accs)
    for p in pixels:
        for v in range(nvec):
            valid = min(lanes, nvalid - v * lanes)
            xv = load_vec(b, gep(b, xb, 4 * (p * pixel_stride + v * lanes)), lanes, valid)
            new[p * nvec + v] = fma(b, xv, wv[v], new[p * nvec + v])
    return new


def _grouped_tap(b: ir.IRBuilder, til: Tiling, accs: list[ir.Value], xb: ir.Value, wb: ir.Value,
                 pixels: list[int], nvec: int, nvalid: int, pixel_stride: int) -> list[ir.Value]:
    """One tap of a tile of narrow groups: ``acc[p, r] += x[p] * w[r]`` (the pixel's input
    vector as loaded; ``w[r]`` the tap's rotation ``r``, ``packing``), one weight vector live."""
    lanes, k = til.lanes, til.group_width
    xs = {p: load_vec(b, gep(b, xb, 4 * p * pixel_stride), lanes, min(lanes, nvalid)) for p in pixels}
    new = list(accs)
    for r in range(k):
        wv = load_vec(b, gep(b, wb, 4 * r * til.blocks * til.nr), lanes)
        for p in pixels:
            new[p * k + r] = fma(b, xs[p], wv, new[p * k + r])
    return new


def _unrotate(b: ir.IRBuilder, til: Tiling, accs: list[ir.Value]) -> ir.Value:
    """One pixel's output vector from its ``k`` rotated accumulators:
    ``sum_r acc_r[l // k * k + (l % k - r) % k]``."""
    lanes, k = til.lanes, til.group_width
    total = accs[0]
    for r in range(1, k):
        mask = ir.Constant(vec(ir.IntType(32), lanes), [j // k * k + (j % k - r) % k for j in range(lanes)])
        total = b.fadd(total, b.shuffle_vector(accs[r], ir.Constant(accs[r].type, None), mask))
    return total
