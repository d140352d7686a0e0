"""The weight gradient of a dense conv on tessera's own kernel (``ConvSpec`` names the forward conv):

    dw[co, ci, kd, kh, kw] = sum over n, od, oh, ow of dy[n, co, od, oh, ow]
                             * x[n, ci, od*sd - pd + kd*dd, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw]

    void @wgrad_conv2d_avx2_n8_64to64_32x32_k3x3_p1x1_wcl(ptr %dy, ptr %x, ptr %dw, i64 %lo, i64 %hi)

``dy`` ``[N, C_out, (OD,) OH, OW]`` and ``x`` ``[N, C_in, (D,) H, W]`` are
channels-last; ``dw`` ``[C_out, C_in, k...]`` is written contiguous or
channels-last (``WgradSpec.weight_layout``). A GEMM over pixels per tap: grid
``(C_out/nr, input-channel groups)``; a grid point keeps its partial sums
``[tap][ci][nr]`` on its stack and, per chunk of output rows (``R * OW >= 64``
pixels), runs every tap and every block of ``nc`` input channels of its group
while the chunk's rows are in L1::

    for n, od, chunk of R output rows (or of whole images, where a plane is small):
      for kd, kh (rows outside x skipped), kw (unrolled; its columns inside x known):
        for each block of nc input channels:                     (a call of the tile)
          acc = 0                                                 (nc * nv vectors in registers)
          for each row of the chunk, each column:
            acc[j][v] += dy[n, od, oh, ow, co0 + v*lanes:] * x[n, id, ih, iw, ci0 + j]
          sums[tap, ci0:ci0+nc, :] += acc                         (two-level sums: chunk, then all)
    dw[co0:co0+nr, group's channels, taps] = sums                 (in dw's layout)

Summing each chunk from zero keeps a long reduction's error at the chunk's and the
chunks' count, not the pixels': 8x16->16 at 128x128 is 1.3e-6 from float64, where a
sequential sum (oneDNN's too) is 1.5e-5. ``nv`` vector loads and ``nc`` broadcasts per ``nc * nv`` FMAs, the conv
kernel's register tile turned over: on AVX2 ``nv = 2`` (16 output channels)
and ``nc = 6``, 12 accumulators::

    vmovups  -32(%r8,%rbx), %ymm12
    vbroadcastss  -20(%r14,%rbx), %ymm14
    vfmadd231ps  %ymm12, %ymm14, %ymm0
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from llvmlite import ir

from tessera.compiler.codegen.irbuild import (
    F32,
    I64,
    PTR,
    counted_loop,
    entry_alloca,
    fma,
    gep,
    guarded,
    i64,
    internal_function,
    load_vec,
    splat,
    store_vec,
    vec,
)
from tessera.compiler.codegen.kernel_family import KernelFamily
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.conv.errors import InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import check_features, get_conv_isa
from tessera.compiler.targets.x86.conv.kernel import add_target_attributes
from tessera.compiler.targets.x86.conv.spec import LAYOUTS, ConvSpec
from tessera.dialects.dim_orders import strides_for
from tessera.runtime.signature import BufferSpec, KernelSignature

CHUNK_PIXELS = 64
"""Output pixels per chunk at least (whole rows, or whole images: ``WgradTiling.planes``):
the register tile is loaded and stored once per chunk, tap and input-channel block."""
GROUP_CHANNELS = 64
"""Input channels of one grid point at most, unless one block of ``nc`` is more
(as few grid points as that allows, their blocks shared out evenly): its partial sums
(``KD*KH*KW x group x nr`` floats) stay on its stack, near L1."""
MAX_NC = 14
STACK_BYTES = 512 * 1024
"""A grid point's stack at most (its partial sums and a packed chunk of ``dy``): a
spec that needs more (a window of hundreds of taps, rows of thousands of pixels) is
refused, and its weight gradient left to the library."""
SUMS_BYTES = 256 * 1024
"""A grid point's partial sums at most: fewer input channels a point where a window has many taps."""
WEIGHT_LAYOUTS = {"contiguous": "[C_out, C_in, k...]", "channels_last": "[C_out, k..., C_in]"}


@dataclass(frozen=True)
class WgradSpec:
    """The weight gradient of ``conv``'s conv, written ``weight_layout`` (the op asks for
    ATen's: channels-last where the forward's input or weight is)."""

    conv: ConvSpec
    weight_layout: str = "contiguous"

    def __post_init__(self) -> None:
        c = self.conv
        if c.groups != 1 or c.bias or c.residual or c.activation != "none":
            raise InvalidConvSpec("the weight-gradient kernel takes a dense conv (one group) with no epilogue")
        if stack_bytes(c) > STACK_BYTES:
            raise InvalidConvSpec(f"the weight-gradient kernel of this conv would keep {stack_bytes(c)} bytes on its "
                                  f"stack, over {STACK_BYTES}")
        if self.weight_layout not in WEIGHT_LAYOUTS:
            raise InvalidConvSpec(f"weight_layout must be one of {', '.join(WEIGHT_LAYOUTS)}, got {self.weight_layout!r}")

    @property
    def isa(self) -> str:
        return self.conv.isa

    @property
    def kernel_name(self) -> str:
        return f"wgrad_{self.conv.kernel_name}" + ("_wcl" if self.weight_layout == "channels_last" else "")

    def weight_shape(self) -> tuple[int, ...]:
        return (self.conv.out_channels, self.conv.in_channels, *self.conv.kernel)

    def weight_strides(self) -> tuple[int, ...]:
        shape = self.weight_shape()
        return strides_for(shape, LAYOUTS[self.weight_layout](len(shape)))


@dataclass(frozen=True)
class WgradTiling:
    lanes: int
    nv: int
    """Vectors of output channels in the register tile."""
    nc: int
    """Input channels (broadcast) in the register tile."""
    rows: int
    """Output rows per chunk."""
    planes: int
    """Images per chunk: more than one where a 2-D conv's whole output plane is under
    :data:`CHUNK_PIXELS` (``rows = planes * OH``: the 4x4 and 2x2 layers of a
    network at small inputs, whose chunks were 16 or 4 pixels)."""
    co_blocks: int
    ci_blocks: int
    group_blocks: int
    """Input-channel blocks of one grid point."""

    @property
    def nr(self) -> int:
        return self.nv * self.lanes

    @property
    def ci_groups(self) -> int:
        return -(-self.ci_blocks // self.group_blocks)


def choose_tiling(conv: ConvSpec) -> WgradTiling:
    """The register tile (as many broadcast input channels as the registers leave beside
    ``nv`` vectors of output channels), the chunk of rows or images, and the grid point's
    input channels."""
    isa = get_conv_isa(conv.isa)
    nv = min(2, -(-conv.out_channels // isa.lanes))
    spare = isa.registers - nv - (0 if isa.embedded_broadcast else 1)
    nc = max(1, min(conv.in_channels, spare // nv, MAX_NC))
    od, oh, ow = conv.as3d("output_size")
    planes = min(conv.batch, -(-CHUNK_PIXELS // (oh * ow))) if od == 1 and oh * ow < CHUNK_PIXELS else 1
    rows = planes * oh if planes > 1 else max(1, min(oh, -(-CHUNK_PIXELS // ow)))
    nr = nv * isa.lanes
    ci_blocks = -(-conv.in_channels // nc)
    groups = -(-conv.in_channels // GROUP_CHANNELS)
    per_group = min(-(-ci_blocks // groups), max(1, SUMS_BYTES // (4 * conv.kernel_volume * nc * nr)))
    return WgradTiling(isa.lanes, nv, nc, rows, planes, -(-conv.out_channels // nr), ci_blocks, per_group)


def _chunk_row(b: ir.IRBuilder, conv: ConvSpec, til: WgradTiling, n0: ir.Value, oh0: ir.Value,
               r: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value | None]:
    """Row ``r`` of the chunk from image ``n0``, row ``oh0``: its image, its output row,
    and whether it exists (None: always)."""
    oh_n = conv.as3d("output_size")[1]
    if til.planes == 1:
        oh = b.add(oh0, r)
        return n0, oh, b.icmp_unsigned("<", oh, i64(oh_n)) if oh_n % til.rows else None
    p = b.udiv(r, i64(oh_n))
    n = b.add(n0, p)
    return n, b.sub(r, b.mul(p, i64(oh_n))), b.icmp_unsigned("<", n, i64(conv.batch)) if conv.batch % til.planes else None


def stack_bytes(conv: ConvSpec) -> int:
    """What one grid point keeps on its stack: partial sums and a packed chunk of ``dy``."""
    til = choose_tiling(conv)
    return 4 * til.nr * (conv.kernel_volume * til.group_blocks * til.nc + til.rows * conv.as3d("output_size")[2])


def signature(spec: WgradSpec) -> KernelSignature:
    c, til = spec.conv, choose_tiling(spec.conv)
    bufs = (BufferSpec(c.output_shape(), c.output_strides(), "float32"),
            BufferSpec(c.input_shape(), c.input_strides(), "float32"),
            BufferSpec(spec.weight_shape(), spec.weight_strides(), "float32", is_output=True))
    return KernelSignature(spec.kernel_name, (til.co_blocks, til.ci_groups), bufs)


def _ow_range(conv: ConvSpec, kw: int) -> tuple[int, int]:
    """The output columns whose tap ``kw`` reads a column of ``x`` (not padding)."""
    _, _, w = conv.as3d("input_size")
    _, _, ow = conv.as3d("output_size")
    sw, pw, dw = conv.as3d("stride")[2], conv.as3d("padding")[2], conv.as3d("dilation")[2]
    lo = max(0, -(-(pw - kw * dw) // sw))
    hi = min(ow, (w - 1 + pw - kw * dw) // sw + 1)
    return lo, max(lo, hi)


def _x_strides(c: ConvSpec) -> tuple[int, int, int, int, int]:
    """Element strides of ``x`` along N, C, D, H, W (``input_layout``: channels-last or contiguous)."""
    n, ch, *sp = c.input_strides()
    return n, ch, (sp[0] if len(sp) == 3 else 0), sp[-2], sp[-1]


TILE_ARGS = ("dy", "x", "acc", "n", "od", "oh0", "id", "kh", "lo", "hi", "iw0")


def _emit_tile(module: ir.Module, spec: WgradSpec, til: WgradTiling, nvalid: int, ncv: int) -> ir.Function:
    """``@name(dy, x, acc, n, od, oh0, id, kh, lo, hi, iw0)``: one chunk of rows at one tap
    for ``nvalid`` output and ``ncv`` input channels (``dy``: the chunk's rows packed
    ``[row][ow][nr]``; ``x`` at the first input channel, ``acc`` at their partial
    sums): columns ``[lo, hi)`` read ``x`` at ``ow * sw + iw0``."""
    c = spec.conv
    fn = internal_function(module, f"{spec.kernel_name}.tile_c{nvalid}_i{ncv}",
                           list(zip(TILE_ARGS, [PTR] * 3 + [I64] * 8, strict=True)))
    dy, x, acc, n0, od, oh0, id_, kh, lo, hi, iw0 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    lanes, nr = til.lanes, til.nr
    nvec = -(-nvalid // lanes)
    vt = vec(F32, lanes)
    H = c.as3d("input_size")[1]
    OW = c.as3d("output_size")[2]
    sh, sw = c.as3d("stride")[1:]
    ph, dh = c.as3d("padding")[1], c.as3d("dilation")[1]
    x_n, x_c, x_d, x_h, x_w = _x_strides(c)
    slots = [(j, v) for j in range(ncv) for v in range(nvec)]
    accs = [ir.Constant(vt, None)] * len(slots)  # the chunk's own sums, added to the running ones at the end

    def pixel(b: ir.IRBuilder, k: ir.Value, accs: list[ir.Value], dy_row: ir.Value, x_row: ir.Value) -> list[ir.Value]:
        ow = b.add(k, lo)
        dyp = gep(b, dy_row, b.mul(ow, i64(4 * nr)))
        dv = [load_vec(b, gep(b, dyp, 4 * v * lanes), lanes, min(lanes, nvalid - v * lanes)) for v in range(nvec)]
        xp = gep(b, x_row, b.mul(b.add(b.mul(ow, i64(sw)), iw0), i64(4 * x_w)))
        new = list(accs)
        for j in range(ncv):
            s = splat(b, b.load(gep(b, xp, 4 * j * x_c), typ=F32, align=4), lanes)
            for v in range(nvec):
                new[j * nvec + v] = fma(b, s, dv[v], new[j * nvec + v])
        return new

    def row(b: ir.IRBuilder, r: ir.Value, accs: list[ir.Value]) -> list[ir.Value]:
        n, oh, exists = _chunk_row(b, c, til, n0, oh0, r)
        ih = b.add(b.mul(oh, i64(sh)), b.sub(b.mul(kh, i64(dh)), i64(ph)))
        inside = b.icmp_unsigned("<", ih, i64(H))
        if exists is not None:
            inside = b.and_(inside, exists)

        def run(b: ir.IRBuilder, accs: list[ir.Value]) -> list[ir.Value]:
            xrow = b.add(b.add(b.mul(n, i64(x_n)), b.mul(id_, i64(x_d))), b.mul(ih, i64(x_h)))
            dy_row, x_row = gep(b, dy, b.mul(r, i64(4 * OW * nr))), gep(b, x, b.mul(xrow, i64(4)))
            return counted_loop(b, b.sub(hi, lo), accs, lambda b, k, a: pixel(b, k, a, dy_row, x_row), "ow")

        return guarded(b, inside, accs, run, "row.in")

    accs = counted_loop(b, til.rows, accs, row, "rows")
    for (j, v), a in zip(slots, accs, strict=True):
        at = gep(b, acc, 4 * (j * nr + v * lanes))
        b.store(b.fadd(b.load(at, typ=vt, align=4), a), at, align=4)
    b.ret_void()
    return fn


def _emit_point(module: ir.Module, spec: WgradSpec, til: WgradTiling, tiles: dict[tuple[int, int], ir.Function],
                nvalid: int, last_cg: bool) -> ir.Function:
    """``@name(dy, x, dw, co0, ci0)``: one grid point, ``nvalid`` output channels from
    ``co0`` and the input channels of one group from ``ci0`` (the last group's:
    ``last_cg``), its partial sums on its stack, then written into ``dw``."""
    c = spec.conv
    fn = internal_function(module, f"{spec.kernel_name}.point_c{nvalid}" + ("_last" if last_cg else ""),
                           [("dy", PTR), ("x", PTR), ("dw", PTR), ("co0", I64), ("ci0", I64)])
    dy, x, dw, co0, ci0 = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    nr, nc, kvol = til.nr, til.nc, c.kernel_volume
    blocks = til.ci_blocks - (til.ci_groups - 1) * til.group_blocks if last_cg else til.group_blocks
    ci_last = c.in_channels - (til.ci_blocks - 1) * nc
    partial = last_cg and ci_last != nc
    channels = (blocks - 1) * nc + ci_last if last_cg else blocks * nc
    acc = entry_alloca(b, F32, kvol * blocks * nc * nr)
    zero = ir.Constant(vec(F32, til.lanes), None)
    counted_loop(b, kvol * blocks * nc * nr // til.lanes, [],
                 lambda b, k, _: store_vec(b, zero, gep(b, acc, b.mul(k, i64(4 * til.lanes)))) or [], "zero")
    D, H, W = c.as3d("input_size")
    OD, OH, _ = c.as3d("output_size")
    KD, KH, KW = c.as3d("kernel")
    sd, pd, dd = c.as3d("stride")[0], c.as3d("padding")[0], c.as3d("dilation")[0]
    pw, dw_ = c.as3d("padding")[2], c.as3d("dilation")[2]
    x_c = _x_strides(c)[1]
    x0 = gep(b, x, b.mul(ci0, i64(4 * x_c)))
    dy0 = entry_alloca(b, F32, til.rows * c.as3d("output_size")[2] * nr)

    def taps(b: ir.IRBuilder, n: ir.Value, od: ir.Value, oh0: ir.Value) -> list[ir.Value]:
        def kd_body(b: ir.IRBuilder, kd: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            id_ = b.add(b.mul(od, i64(sd)), b.sub(b.mul(kd, i64(dd)), i64(pd)))

            def kh_body(b: ir.IRBuilder, kh: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
                for kw in range(KW):
                    lo, hi = _ow_range(c, kw)
                    if lo == hi:
                        continue
                    tap = b.add(b.mul(b.add(b.mul(kd, i64(KH)), kh), i64(KW)), i64(kw))
                    tap_acc = gep(b, acc, b.mul(tap, i64(4 * blocks * nc * nr)))
                    rest = [n, od, oh0, id_, kh, i64(lo), i64(hi), i64(kw * dw_ - pw)]

                    def block(b: ir.IRBuilder, k: ir.Value, ncv: int, tap_acc=tap_acc, rest=rest) -> list[ir.Value]:
                        b.call(tiles[(nvalid, ncv)], [dy0, gep(b, x0, b.mul(k, i64(4 * nc * x_c))),
                                                      gep(b, tap_acc, b.mul(k, i64(4 * nc * nr))), *rest])
                        return []

                    full = blocks - 1 if partial else blocks
                    counted_loop(b, full, [], lambda b, k, _: block(b, k, nc), "ci.blocks")
                    if partial:
                        block(b, i64(full), ci_last)
                return []

            return guarded(b, b.icmp_unsigned("<", id_, i64(D)), [],
                           lambda b, _: counted_loop(b, KH, [], kh_body, "kh"), "kd.in")

        return counted_loop(b, KD, [], kd_body, "kd")

    def chunk(b: ir.IRBuilder, n: ir.Value, od: ir.Value, oh0: ir.Value) -> list[ir.Value]:
        _pack_dy(b, spec, til, dy, dy0, co0, nvalid, n, od, oh0)
        return taps(b, n, od, oh0)

    def plane(b: ir.IRBuilder, n: ir.Value, od: ir.Value) -> list[ir.Value]:
        return counted_loop(b, -(-OH // til.rows), [],
                            lambda b, k, _: chunk(b, n, od, b.mul(k, i64(til.rows))), "chunks")

    if til.planes > 1:  # chunks of whole images (2-D: od = 0)
        counted_loop(b, -(-c.batch // til.planes), [], lambda b, k, _: chunk(b, b.mul(k, i64(til.planes)), i64(0),
                                                                               i64(0)), "images")
    else:
        counted_loop(b, c.batch, [],
                     lambda b, n, _: counted_loop(b, OD, [], lambda b, od, _: plane(b, n, od), "od"), "n")
    _write_out(b, spec, acc, dw, co0, ci0, nvalid, channels, blocks * nc)
    b.ret_void()
    return fn


def _pack_dy(b: ir.IRBuilder, spec: WgradSpec, til: WgradTiling, dy: ir.Value, packed: ir.Value, co0: ir.Value,
             nvalid: int, n0: ir.Value, od: ir.Value, oh0: ir.Value) -> None:
    """The chunk's rows of ``dy`` for ``nvalid`` output channels from ``co0`` into
    ``packed[row][ow][nr]``: vectors from a channels-last ``dy``, scalars from a
    contiguous one (its channels planes apart). Read ``R * KD*KH*KW * (C_in / nc)``
    times from L1 by the tiles, with no conflicts: ``dy``'s own pixels are ``C_out``
    floats apart, which for 256 channels puts a chunk's 64 pixels into 4 of L1's 64 sets."""
    c = spec.conv
    OW = c.as3d("output_size")[2]
    s_n, s_c, *s_sp = c.output_strides()
    s_d, s_h, s_w = (s_sp[0] if len(s_sp) == 3 else 0), s_sp[-2], s_sp[-1]
    lanes, nr = til.lanes, til.nr

    def row(b: ir.IRBuilder, r: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        n, oh, exists = _chunk_row(b, c, til, n0, oh0, r)
        src = gep(b, dy, b.mul(b.add(b.add(b.add(b.mul(n, i64(s_n)), b.mul(od, i64(s_d))), b.mul(oh, i64(s_h))),
                                     b.mul(co0, i64(s_c))), i64(4)))
        dst = gep(b, packed, b.mul(r, i64(4 * OW * nr)))

        def pixel(b: ir.IRBuilder, ow: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            at, to = gep(b, src, b.mul(ow, i64(4 * s_w))), gep(b, dst, b.mul(ow, i64(4 * nr)))
            if s_c == 1:
                for v in range(-(-nvalid // lanes)):
                    valid = min(lanes, nvalid - v * lanes)
                    store_vec(b, load_vec(b, gep(b, at, 4 * v * lanes), lanes, valid), gep(b, to, 4 * v * lanes), valid)
                return []
            for ch in range(nvalid):
                b.store(b.load(gep(b, at, 4 * ch * s_c), typ=F32, align=4), gep(b, to, 4 * ch), align=4)
            return []

        body = lambda b, _: counted_loop(b, OW, [], pixel, "pack.ow")  # noqa: E731
        return body(b, []) if exists is None else guarded(b, exists, [], body, "pack.in")

    counted_loop(b, til.rows, [], row, "pack.rows")


def _write_out(b: ir.IRBuilder, spec: WgradSpec, acc: ir.Value, dw: ir.Value, co0: ir.Value, ci0: ir.Value,
               nvalid: int, channels: int, stride: int) -> None:
    """The partial sums ``acc[tap][ci][co]`` (``stride`` input channels a tap) into ``dw``
    in its layout, scalar by scalar (``KD*KH*KW * channels * nvalid`` of them)."""
    nr, kvol = choose_tiling(spec.conv).nr, spec.conv.kernel_volume
    s_co, s_ci, *s_k = spec.weight_strides()
    s_tap = s_k[-1]  # taps are consecutive in both layouts

    def per_co(b: ir.IRBuilder, co: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        out_co = gep(b, dw, b.mul(b.add(co0, co), i64(4 * s_co)))

        def per_tap(b: ir.IRBuilder, t: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            src = gep(b, acc, b.mul(b.add(b.mul(t, i64(stride * nr)), co), i64(4)))
            dst = gep(b, out_co, b.mul(b.add(b.mul(t, i64(s_tap)), ci0 if s_ci == 1 else b.mul(ci0, i64(s_ci))), i64(4)))

            def per_ci(b: ir.IRBuilder, ci: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
                v = b.load(gep(b, src, b.mul(ci, i64(4 * nr))), typ=F32, align=4)
                b.store(v, gep(b, dst, b.mul(ci, i64(4 * s_ci))), align=4)
                return []

            return counted_loop(b, channels, [], per_ci, "ci")

        return counted_loop(b, kvol, [], per_tap, "tap")

    counted_loop(b, nvalid, [], per_co, "co")


def wgrad_module(spec: WgradSpec, target: LlvmTarget) -> ir.Module:
    """The LLVM module of ``spec``'s weight gradient."""
    c, til = spec.conv, choose_tiling(spec.conv)
    module = ir.Module(name=spec.kernel_name)
    module.triple, module.data_layout = target.triple, target.data_layout
    co_last = c.out_channels - (til.co_blocks - 1) * til.nr
    ci_last = c.in_channels - (til.ci_blocks - 1) * til.nc
    cos = sorted({til.nr, co_last})
    tiles = {(co, ci): _emit_tile(module, spec, til, co, ci) for co in cos for ci in {til.nc, ci_last}}
    points = {(co, last): _emit_point(module, spec, til, tiles, co, last) for co in cos
              for last in sorted({til.ci_groups == 1, True})}
    fn, bufs = target.declare_kernel(module, spec.kernel_name, 3)
    for arg, name in zip(bufs, ("dy", "x", "dw"), strict=True):
        arg.name = name
    for f in module.functions:
        if not f.is_declaration:
            add_target_attributes(f, target)

    def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
        cob, cg = idx
        args = [*bufs, b.mul(cob, i64(til.nr)), b.mul(cg, i64(til.group_blocks * til.nc))]
        co_edge = b.icmp_unsigned("==", cob, i64(til.co_blocks - 1))
        cg_edge = b.icmp_unsigned("==", cg, i64(til.ci_groups - 1))
        done = b.function.append_basic_block("point.done")
        for (co, last), f in points.items():
            hit = b.and_(co_edge if co == co_last else b.not_(co_edge), cg_edge if last else b.not_(cg_edge))
            if co == co_last == til.nr:
                hit = cg_edge if last else b.not_(cg_edge)
            then, other = b.function.append_basic_block("point"), b.function.append_basic_block("point.next")
            b.cbranch(hit, then, other)
            b.position_at_end(then)
            b.call(f, args)
            b.branch(done)
            b.position_at_end(other)
        b.branch(done)
        b.position_at_end(done)

    b = ir.IRBuilder(fn.append_basic_block("entry"))
    target.emit_grid(b, fn, (til.co_blocks, til.ci_groups), point, vectorize=False)
    return module


WGRAD = KernelFamily(isa_features=lambda isa: get_conv_isa(isa).features, check_features=check_features,
                     module=wgrad_module, signature=signature)


def load_wgrad(spec: WgradSpec, features: str | None = None):
    """The loaded kernel of ``spec`` (built once per process, path and thread count)."""
    from tessera.compiler.build import cpu_kernel
    from tessera.compiler.targets.x86.conv.build import conv_target

    return cpu_kernel(spec.kernel_name, f"{spec!r} {features}", lambda: conv_target(spec.isa, features).cache_key(),
                      lambda: WGRAD.artifact(spec, features))


def conv_weight_grad(dy: torch.Tensor, x: torch.Tensor, spec: WgradSpec, features: str | None = None) -> torch.Tensor:
    """``dw`` of ``spec``'s conv for ``dy`` and ``x`` (copied channels-last where they are not)."""
    cl = torch.channels_last if spec.conv.spatial_dims == 2 else torch.channels_last_3d
    out = torch.empty_strided(spec.weight_shape(), spec.weight_strides())
    load_wgrad(spec, features)(dy.contiguous(memory_format=cl), x.contiguous(memory_format=cl), out)
    return out
