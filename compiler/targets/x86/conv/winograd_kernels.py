"""The Winograd input and output transforms as kernels (LLVM IR), vectorized over channels.

    void @winograd4_in_<conv>(ptr %x, ptr %v, i64 %lo, i64 %hi)                   // grid (N, tiles_h, tiles_w)
    void @winograd4_out_<conv>(ptr %m, [ptr %bias,] [ptr %res,] ptr %out, i64 %lo, i64 %hi)

Input: per tile, per vector of channels, the 6 x 6 input patch (``select``-ed
to zero past the image's edges: the conv's zero padding) and ``B^T d B`` into
``V[n, t, p, c]``. Output: per tile, per vector of channels, ``A^T M A``, then
the conv's epilogue (bias, residual, ReLU/ReLU6: NaN stays NaN) and the 4 x 4
outputs that lie in the image stored. A tile wholly inside the image runs a
path without the edge tests. The transforms are linear combinations with the
matrices' constant coefficients (``winograd_spec.TRANSFORMS``): a 0 is left
out, a +-1 is an add or a subtract.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from llvmlite import ir

from tessera.compiler.codegen.irbuild import F32, counted_loop, gep, i64, load_vec, store_vec, vec
from tessera.compiler.codegen.kernel_family import KernelFamily
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.conv.epilogue import activate
from tessera.compiler.targets.x86.conv.isa import check_features, get_conv_isa
from tessera.compiler.targets.x86.conv.kernel import add_target_attributes, buffer_names, buffer_specs
from tessera.compiler.targets.x86.conv.winograd_spec import TRANSFORMS, Matrix, WinogradSpec
from tessera.runtime.signature import BufferSpec, KernelSignature


def combine(b: ir.IRBuilder, row: Sequence[Fraction], xs: Sequence[ir.Value]) -> ir.Value:
    """``sum_k row[k] * xs[k]`` over the nonzero coefficients (a +-1 as an add or subtract)."""
    out = None
    for c, x in zip(row, xs, strict=True):
        if c == 0:
            continue
        if out is None:
            out = x if c == 1 else b.fneg(x) if c == -1 else b.fmul(x, _const(x, c))
        elif c == 1:
            out = b.fadd(out, x)
        elif c == -1:
            out = b.fsub(out, x)
        else:
            out = b.fadd(out, b.fmul(x, _const(x, c)))
    return out if out is not None else ir.Constant(xs[0].type, None)


def _const(x: ir.Value, c: Fraction) -> ir.Constant:
    return ir.Constant(x.type, [float(c)] * x.type.count)


def sandwich(b: ir.IRBuilder, left: Matrix, d: Sequence[Sequence[ir.Value]]) -> list[list[ir.Value]]:
    """``left @ d @ left^T`` of a matrix of vectors."""
    rows = [[combine(b, r, [d[k][j] for k in range(len(d))]) for j in range(len(d[0]))] for r in left]
    return [[combine(b, r, row) for r in left] for row in rows]


def input_signature(ws: WinogradSpec) -> KernelSignature:
    c = ws.conv
    return KernelSignature(f"winograd{ws.m}_in_{c.kernel_name}", (c.batch, *ws.tiles_hw), (
        BufferSpec(c.input_shape(), c.input_strides(), "float32"),
        BufferSpec(ws.transformed_shape(c.in_channels), ws.transformed_strides(c.in_channels), "float32",
                   is_output=True)))


def output_signature(ws: WinogradSpec) -> KernelSignature:
    """``M``, then the conv kernel's own arguments after its weight: ``[bias]``, ``[res]``, ``out``."""
    c = ws.conv
    m = BufferSpec(ws.transformed_shape(c.out_channels), ws.transformed_strides(c.out_channels), "float32")
    return KernelSignature(f"winograd{ws.m}_out_{c.kernel_name}", (c.batch, *ws.tiles_hw), (m, *buffer_specs(c)[2:]))


def _channel_vectors(b: ir.IRBuilder, channels: int, lanes: int,
                     body: Callable[[ir.IRBuilder, ir.Value, int], None], name: str) -> None:
    """``body(b, c0, valid)`` per vector of ``lanes`` channels (``c0``: its first), the last masked."""
    full = channels // lanes

    def one(b: ir.IRBuilder, v: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        body(b, b.mul(v, i64(lanes)), lanes)
        return []

    counted_loop(b, full, [], one, name)
    if channels % lanes:
        body(b, i64(full * lanes), channels % lanes)


def _branch(b: ir.IRBuilder, cond: ir.Value, then: Callable[[ir.IRBuilder], None],
            other: Callable[[ir.IRBuilder], None], name: str) -> None:
    fn = b.function
    t, o, done = (fn.append_basic_block(f"{name}.{s}") for s in ("then", "else", "end"))
    b.cbranch(cond, t, o)
    for block, emit in ((t, then), (o, other)):
        b.position_at_end(block)
        emit(b)
        b.branch(done)
    b.position_at_end(done)


def _all(b: ir.IRBuilder, conds: Sequence[ir.Value]) -> ir.Value:
    out = conds[0]
    for c in conds[1:]:
        out = b.and_(out, c)
    return out


def _tile_channels(b: ir.IRBuilder, inside: Sequence[ir.Value], channels: int, lanes: int,
                   vector: Callable[[ir.IRBuilder, ir.Value, int, bool], None]) -> None:
    """``vector(b, c0, valid, edges)`` for every channel vector of a tile; ``edges``
    is False on the path of a tile for which every condition of ``inside`` holds."""
    def path(edges: bool) -> Callable[[ir.IRBuilder], None]:
        return lambda b: _channel_vectors(b, channels, lanes, lambda b, c0, valid: vector(b, c0, valid, edges), "c")

    _branch(b, _all(b, inside), path(False), path(True), "inside")


def _tile_grid(target: LlvmTarget, fn: ir.Function, ws: WinogradSpec,
               point: Callable[[ir.IRBuilder, list[ir.Value]], None]) -> None:
    """The kernel's body: ``point(b, [n, th, tw])`` over the grid ``(N, tiles_h, tiles_w)``."""
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    target.emit_grid(b, fn, (ws.conv.batch, *ws.tiles_hw), point)


def _kernel(sig: KernelSignature, target: LlvmTarget) -> tuple[ir.Module, ir.Function, list[ir.Value]]:
    """The module of kernel ``sig``, its function and buffer arguments."""
    module = ir.Module(name=sig.name)
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, bufs = target.declare_kernel(module, sig.name, len(sig.args))
    add_target_attributes(fn, target)
    return module, fn, bufs


def input_module(ws: WinogradSpec, target: LlvmTarget) -> ir.Module:
    c = ws.conv
    bt, _, _ = TRANSFORMS[ws.m]
    lanes = get_conv_isa(c.isa).lanes
    module, fn, (x, v) = _kernel(input_signature(ws), target)
    H, W = c.input_size
    ph, pw = c.dims("padding")
    sn, _, sh, sw = c.input_strides()
    a = ws.a
    th_n, tw_n = ws.tiles_hw
    vs = ws.transformed_strides(c.in_channels)
    zero = ir.Constant(vec(F32, lanes), None)

    def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
        n, th, tw = idx
        ih = [b.add(b.sub(b.mul(th, i64(ws.m)), i64(ph)), i64(i)) for i in range(a)]
        iw = [b.add(b.sub(b.mul(tw, i64(ws.m)), i64(pw)), i64(j)) for j in range(a)]
        rok = [b.icmp_unsigned("<", r, i64(H)) for r in ih]
        cok = [b.icmp_unsigned("<", q, i64(W)) for q in iw]
        # addresses clamped into the image: a patch pixel past the edge loads a valid one, then selects 0
        rows = [b.mul(b.select(ok, r, i64(0)), i64(4 * sh)) for ok, r in zip(rok, ih)]
        cols = [b.mul(b.select(ok, q, i64(0)), i64(4 * sw)) for ok, q in zip(cok, iw)]
        img = gep(b, x, b.mul(n, i64(4 * sn)))
        base = [[gep(b, img, b.add(r, q)) for q in cols] for r in rows]
        t = b.add(b.mul(th, i64(tw_n)), tw)
        vout = gep(b, v, b.add(b.mul(n, i64(4 * vs[0])), b.mul(t, i64(4 * vs[3]))))

        def vector(b: ir.IRBuilder, c0: ir.Value, valid: int, edges: bool) -> None:
            off = b.mul(c0, i64(4))
            d = [[load_vec(b, gep(b, base[i][j], off), lanes, valid) for j in range(a)] for i in range(a)]
            if edges:
                d = [[b.select(b.and_(rok[i], cok[j]), d[i][j], zero) for j in range(a)] for i in range(a)]
            out = sandwich(b, bt, d)
            for p in range(ws.points):
                store_vec(b, out[p // a][p % a], gep(b, vout, b.add(off, i64(4 * p * c.in_channels))), valid)

        _tile_channels(b, rok + cok, c.in_channels, lanes, vector)

    _tile_grid(target, fn, ws, point)
    return module


def output_module(ws: WinogradSpec, target: LlvmTarget) -> ir.Module:
    c = ws.conv
    _, _, at = TRANSFORMS[ws.m]
    lanes = get_conv_isa(c.isa).lanes
    module, fn, bufs = _kernel(output_signature(ws), target)
    ptrs = dict(zip(["m", *buffer_names(c)[2:]], bufs, strict=True))
    OH, OW = c.output_size
    sn, _, sh, sw = c.output_strides()
    a, m = ws.a, ws.m
    th_n, tw_n = ws.tiles_hw
    ms = ws.transformed_strides(c.out_channels)

    def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
        n, th, tw = idx
        oh = [b.add(b.mul(th, i64(m)), i64(i)) for i in range(m)]
        ow = [b.add(b.mul(tw, i64(m)), i64(j)) for j in range(m)]
        rok = [b.icmp_unsigned("<", r, i64(OH)) for r in oh]
        cok = [b.icmp_unsigned("<", q, i64(OW)) for q in ow]
        t = b.add(b.mul(th, i64(tw_n)), tw)
        mtile = gep(b, ptrs["m"], b.add(b.mul(n, i64(4 * ms[0])), b.mul(t, i64(4 * ms[3]))))
        at_pixel = [[b.mul(b.add(b.add(b.mul(n, i64(sn)), b.mul(r, i64(sh))), b.mul(q, i64(sw))), i64(4))
                     for q in ow] for r in oh]

        def vector(b: ir.IRBuilder, c0: ir.Value, valid: int, edges: bool) -> None:
            off = b.mul(c0, i64(4))
            mv = [[load_vec(b, gep(b, mtile, b.add(off, i64(4 * (i * a + j) * c.out_channels))), lanes, valid)
                   for j in range(a)] for i in range(a)]
            y = sandwich(b, at, mv)
            bias = load_vec(b, gep(b, ptrs["bias"], off), lanes, valid) if c.bias else None
            for i in range(m):
                for j in range(m):
                    def store(b: ir.IRBuilder, i=i, j=j) -> None:
                        at_ = b.add(at_pixel[i][j], off)
                        value = y[i][j] if bias is None else b.fadd(y[i][j], bias)
                        if c.residual:
                            value = b.fadd(value, load_vec(b, gep(b, ptrs["res"], at_), lanes, valid))
                        value = activate(b, value, c.activation)
                        store_vec(b, value, gep(b, ptrs["out"], at_), valid)

                    if edges:
                        _branch(b, b.and_(rok[i], cok[j]), store, lambda b: None, f"px{i}{j}")
                    else:
                        store(b)

        _tile_channels(b, rok + cok, c.out_channels, lanes, vector)

    _tile_grid(target, fn, ws, point)
    return module


def _features(isa: str) -> str:
    return get_conv_isa(isa).features


WINOGRAD_INPUT = KernelFamily(isa_features=_features, check_features=check_features, module=input_module,
                              signature=input_signature)
WINOGRAD_OUTPUT = KernelFamily(isa_features=_features, check_features=check_features, module=output_module,
                               signature=output_signature)
