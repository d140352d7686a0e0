"""Packing a conv weight at run time: the layout of ``packing`` written by a kernel.

    void @conv_pack_avx512_256to1024_k1x1_nr64(ptr %w, ptr %packed, i64 %lo, i64 %hi)

Without ``freezing`` a weight is packed on every call (a write eager sees is
seen), so packing is on the path of every call: this kernel writes the bytes
of ``pack_weight`` (the reference) at memory speed, where the torch version
copies through padded and permuted temporaries (5-8x a ``clone``).

Dense: grid ``(G * blocks, taps, cin_g)``; a point gathers one input channel of
one tap for the ``nr`` output channels of a block (vector gathers of floats
``cin_g * taps`` apart, ``taps`` in a flipped weight: ``pack_ir.weight_source``) and stores them as vectors: ``packed[gb, tap, ci, :]``.
Channelwise: grid ``(taps, blocks)``; a point writes ``packed[tap, r, b*nr:(b+1)*nr]``
for each of the ``k`` rotations (one gather each, its lanes' offsets a constant).
The last block's channels past the weight's are zeros.
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import i64, umin
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.conv.build import conv_target
from tessera.compiler.targets.x86.conv.pack_ir import gather_block, weight_source
from tessera.compiler.targets.x86.conv.packing import packed_shape
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling, choose_tiling
from tessera.dialects.dim_orders import identity, strides_for
from tessera.runtime.artifact import Artifact
from tessera.runtime.signature import BufferSpec, KernelSignature


def pack_kernel_name(spec: ConvSpec) -> str:
    til = choose_tiling(spec)
    k = "x".join(map(str, spec.kernel))
    kind = f"cw{til.group_width}" if til.channelwise else f"g{spec.groups}"
    flip = "_flip" if spec.flipped_weight else ""
    return f"conv_pack_{spec.isa}_{spec.in_channels}to{spec.out_channels}_k{k}_{kind}_nr{til.nr}{flip}"


def pack_signature(spec: ConvSpec) -> KernelSignature:
    til = choose_tiling(spec)
    ps = packed_shape(spec, til)
    return KernelSignature(pack_kernel_name(spec), _grid(spec, til), (
        BufferSpec(spec.plain_weight_shape(), spec.plain_weight_strides(), "float32"),
        BufferSpec(ps, strides_for(ps, identity(len(ps))), "float32", is_output=True)))


def _grid(spec: ConvSpec, til: Tiling) -> tuple[int, ...]:
    taps = spec.kernel_volume
    return (taps, til.blocks) if til.channelwise else (spec.groups * til.blocks, spec.cin_g, taps)


def pack_module(spec: ConvSpec, target: LlvmTarget) -> ir.Module:
    til = choose_tiling(spec)
    nr, taps, cin_g = til.nr, spec.kernel_volume, spec.cin_g
    name = pack_kernel_name(spec)
    module = ir.Module(name=name)
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, (src, dst) = target.declare_kernel(module, name, 2)
    src.name, dst.name = "w", "packed"
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    if til.channelwise:
        def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
            tap, blk = idx
            c0 = b.mul(blk, i64(nr))
            nvalid = umin(b, i64(nr), b.sub(i64(spec.out_channels), c0))
            k = til.group_width
            for r in range(k):  # lane j (channel c0 + j): w[c0 + j // k * k + (j % k + r) % k, j % k, tap]
                out = b.mul(b.add(b.mul(b.add(b.mul(tap, i64(k)), i64(r)), i64(til.blocks)), blk), i64(nr))
                offsets = tuple(((j // k * k + (j % k + r) % k) * k + j % k) * taps for j in range(nr))
                gather_block(b, src, dst, b.add(b.mul(c0, i64(k * taps)), tap), offsets, out, til, nvalid)
    else:
        def point(b: ir.IRBuilder, idx: list[ir.Value]) -> None:
            gb, ci, tap = idx
            g, blk = b.udiv(gb, i64(til.blocks)), b.urem(gb, i64(til.blocks))
            co0 = b.mul(blk, i64(nr))
            nvalid = umin(b, i64(nr), b.sub(i64(spec.cout_g), co0))
            row = b.add(b.mul(g, i64(spec.cout_g)), co0)
            first, step = weight_source(b, spec, row, ci, tap)
            out = b.mul(b.add(b.mul(b.add(b.mul(gb, i64(taps)), tap), i64(cin_g)), ci), i64(nr))
            gather_block(b, src, dst, first, step, out, til, nvalid)

    target.emit_grid(b, fn, _grid(spec, til), point)
    return module


def build_pack_kernel(spec: ConvSpec, features: str | None = None) -> Artifact:
    """An x86 object with the kernel packing ``spec``'s weight."""
    target = conv_target(spec.isa, features)
    data = target.emit_artifact(optimize(str(pack_module(spec, target)), target))
    return Artifact(target=target.name, kind=target.artifact_kind, data=data, signatures=(pack_signature(spec),),
                    target_key=target.cache_key())
