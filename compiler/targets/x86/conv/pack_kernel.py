"""Packing a conv weight at run time: the layout of ``packing`` written by a kernel.

    void @conv_pack_avx512_256to1024_k1x1_nr64(ptr %w, ptr %packed, i64 %lo, i64 %hi)

Without ``freezing`` a weight is packed on every call (a write eager sees is
seen), so packing is on the path of every call: this kernel writes the bytes
of ``pack_weight`` (the reference) at memory speed, where the torch version
copies through padded and permuted temporaries (5-8x a ``clone``).

Dense: grid ``(G * blocks, taps, cin_g)``; a point gathers one input channel of
one tap for the ``nr`` output channels of a block (vector gathers of floats
``cin_g * taps`` apart) and stores them as vectors: ``packed[gb, tap, ci, :]``.
Depthwise: grid ``(taps, blocks)``, ``packed[tap, b*nr:(b+1)*nr]``. The last
block's channels past the weight's are zeros.
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import F32, I64, PTR, counted_loop, gep, i64, intrinsic, splat, umin, vec
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.conv.build import conv_target
from tessera.compiler.targets.x86.conv.packing import packed_shape
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling, choose_tiling
from tessera.dialects.dim_orders import identity, strides_for
from tessera.runtime.artifact import Artifact
from tessera.runtime.signature import BufferSpec, KernelSignature


def pack_kernel_name(spec: ConvSpec) -> str:
    til = choose_tiling(spec)
    k = "x".join(map(str, spec.kernel))
    kind = "dw" if til.depthwise else f"g{spec.groups}"
    return f"conv_pack_{spec.isa}_{spec.in_channels}to{spec.out_channels}_k{k}_{kind}_nr{til.nr}"


def pack_signature(spec: ConvSpec) -> KernelSignature:
    til = choose_tiling(spec)
    ws = (spec.out_channels, spec.cin_g, *spec.kernel)
    ps = packed_shape(spec, til)
    return KernelSignature(pack_kernel_name(spec), _grid(spec, til), (
        BufferSpec(ws, strides_for(ws, identity(len(ws))), "float32"),
        BufferSpec(ps, strides_for(ps, identity(len(ps))), "float32", is_output=True)))


def _grid(spec: ConvSpec, til: Tiling) -> tuple[int, ...]:
    taps = spec.kernel_volume
    return (taps, til.blocks) if til.depthwise else (spec.groups * til.blocks, taps, spec.cin_g)


def _gather(b: ir.IRBuilder, src: ir.Value, dst: ir.Value, first: ir.Value, step: int, out: ir.Value,
            til: Tiling, nvalid: ir.Value) -> None:
    """``dst[out:out+nr] = src[first + j*step]`` for ``j < nvalid``, zeros after; a
    whole block is ``nr / lanes`` vector gathers (``vgatherqps``) and stores."""
    nr, lanes = til.nr, til.lanes
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
        offsets = ir.Constant(index, [4 * (c * lanes + j) * step for j in range(lanes)])
        ptrs = b.inttoptr(b.add(base, offsets), ptrs_type)
        v = b.call(gather, [ptrs, ir.Constant(ir.IntType(32), 4), mask, ir.Constant(f32s, None)])
        b.store(v, gep(b, dst, b.mul(b.add(out, i64(c * lanes)), i64(4))), align=4)
    b.branch(done)

    b.position_at_end(part)
    b.store(ir.Constant(vec(F32, nr), None), gep(b, dst, b.mul(out, i64(4))), align=4)

    def one(b: ir.IRBuilder, j: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
        x = b.load(gep(b, src, b.mul(b.add(first, b.mul(j, i64(step))), i64(4))), typ=F32, align=4)
        b.store(x, gep(b, dst, b.mul(b.add(out, j), i64(4))), align=4)
        return []

    counted_loop(b, nvalid, [], one, "pack.chan")
    b.branch(done)
    b.position_at_end(done)


def pack_module(spec: ConvSpec, target: LlvmTarget) -> ir.Module:
    til = choose_tiling(spec)
    nr, taps, cin_g = til.nr, spec.kernel_volume, spec.cin_g
    name = pack_kernel_name(spec)
    module = ir.Module(name=name)
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, (src, dst) = target.declare_kernel(module, name, 2)
    src.name, dst.name = "w", "packed"
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    if til.depthwise:
        def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
            tap, blk = idx
            c0 = b.mul(blk, i64(nr))
            nvalid = umin(b, i64(nr), b.sub(i64(spec.out_channels), c0))
            out = b.mul(b.add(b.mul(tap, i64(til.blocks)), blk), i64(nr))
            _gather(b, src, dst, b.add(b.mul(c0, i64(taps)), tap), taps, out, til, nvalid)
    else:
        def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
            gb, tap, ci = idx
            g, blk = b.udiv(gb, i64(til.blocks)), b.urem(gb, i64(til.blocks))
            co0 = b.mul(blk, i64(nr))
            nvalid = umin(b, i64(nr), b.sub(i64(spec.cout_g), co0))
            row = b.add(b.mul(g, i64(spec.cout_g)), co0)
            first = b.add(b.mul(b.add(b.mul(row, i64(cin_g)), ci), i64(taps)), tap)
            out = b.mul(b.add(b.mul(b.add(b.mul(gb, i64(taps)), tap), i64(cin_g)), ci), i64(nr))
            _gather(b, src, dst, first, cin_g * taps, out, til, nvalid)

    target.emit_grid(b, fn, _grid(spec, til), point)
    return module


def build_pack_kernel(spec: ConvSpec, features: str | None = None) -> Artifact:
    """An x86 object with the kernel packing ``spec``'s weight."""
    target = conv_target(spec.isa, features)
    data = target.emit_artifact(optimize(str(pack_module(spec, target)), target))
    return Artifact(target=target.name, kind=target.artifact_kind, data=data, signatures=(pack_signature(spec),),
                    target_key=target.cache_key())
