"""Packing B at run time: the layout of ``packing`` written by a kernel.

    void @int8_pack_b_avx512vnni_u8_4096x4096(ptr %b, ptr %packed, i64 %lo, i64 %hi)

Grid ``(NP, KG)``: one point writes one K-group of one panel (``nr * 4``
bytes). A whole group (4 rows of B, ``nr`` valid columns) is 4 vector loads
interleaved by one shuffle into the VNNI order (``packed[c*4 + j] = b[4g+j,
n0+c]``), XORed with 0x80 for s8 A on the VNNI paths; the last group (K % 4)
and the last panel (N % nr) go byte by byte over zeros.
"""

from __future__ import annotations

from llvmlite import ir

from tessera.compiler.codegen.irbuild import I8, byte_ptr, counted_loop, i64, umin, vec
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.int8_gemm.build import gemm_target
from tessera.compiler.targets.x86.int8_gemm.packing import PackLayout, pack_layout
from tessera.runtime.artifact import Artifact
from tessera.runtime.signature import BufferSpec, KernelSignature


def pack_kernel_name(K: int, N: int, isa: str, a_signed: bool) -> str:
    return f"int8_pack_b_{isa}_{'s8' if a_signed else 'u8'}_{K}x{N}"


def pack_signature(K: int, N: int, isa: str, a_signed: bool) -> KernelSignature:
    lay = pack_layout(K, N, isa, a_signed)
    return KernelSignature(pack_kernel_name(K, N, isa, a_signed), (lay.panels, lay.groups), (
        BufferSpec((K, N), (N, 1), "int8"), BufferSpec(lay.shape, lay.strides, "int8", is_output=True)))


def _group(b: ir.IRBuilder, lay: PackLayout, src: ir.Value, dst: ir.Value, p: ir.Value, g: ir.Value) -> None:
    nr, K, N = lay.nr, lay.K, lay.N
    n0 = b.mul(p, i64(nr))
    nvalid = umin(b, i64(nr), b.sub(i64(N), n0))
    out = byte_ptr(b, dst, b.mul(b.add(b.mul(p, i64(lay.groups)), g), i64(4 * nr)))
    k0 = b.mul(g, i64(4))
    flip = ir.Constant(vec(I8, 4 * nr), [0x80 if lay.flipped else 0] * (4 * nr))
    fn = b.function
    whole, part, done = (fn.append_basic_block(n) for n in ("pack.whole", "pack.part", "pack.done"))
    is_whole = b.and_(b.icmp_signed("==", nvalid, i64(nr)), b.icmp_signed("<=", b.add(k0, i64(4)), i64(K)))
    b.cbranch(is_whole, whole, part)

    b.position_at_end(whole)
    rows = [b.load(byte_ptr(b, src, b.add(b.mul(b.add(k0, i64(j)), i64(N)), n0)), typ=vec(I8, nr), align=1)
            for j in range(4)]
    pair = list(range(2 * nr))
    lo, hi = b.shuffle_vector(rows[0], rows[1], ir.Constant(vec(ir.IntType(32), 2 * nr), pair)), \
        b.shuffle_vector(rows[2], rows[3], ir.Constant(vec(ir.IntType(32), 2 * nr), pair))
    order = [j * nr + c for c in range(nr) for j in range(4)]
    packed = b.shuffle_vector(lo, hi, ir.Constant(vec(ir.IntType(32), 4 * nr), order))
    b.store(b.xor(packed, flip) if lay.flipped else packed, out, align=1)
    b.branch(done)

    b.position_at_end(part)
    b.store(ir.Constant(vec(I8, 4 * nr), None), out, align=1)
    for j in range(4):
        k = b.add(k0, i64(j))
        count = b.select(b.icmp_signed("<", k, i64(K)), nvalid, i64(0))
        row = b.add(b.mul(k, i64(N)), n0)

        def col(b: ir.IRBuilder, c: ir.Value, _: list[ir.Value], row=row, j=j) -> list[ir.Value]:
            v = b.load(byte_ptr(b, src, b.add(row, c)), typ=I8, align=1)
            if lay.flipped:
                v = b.xor(v, ir.Constant(I8, 0x80))
            b.store(v, byte_ptr(b, out, b.add(b.mul(c, i64(4)), i64(j))), align=1)
            return []

        counted_loop(b, count, [], col, f"pack.col{j}")
    b.branch(done)
    b.position_at_end(done)


def pack_module(K: int, N: int, isa: str, a_signed: bool, target: LlvmTarget) -> ir.Module:
    lay = pack_layout(K, N, isa, a_signed)
    name = pack_kernel_name(K, N, isa, a_signed)
    module = ir.Module(name=name)
    module.triple, module.data_layout = target.triple, target.data_layout
    fn, (src, dst) = target.declare_kernel(module, name, 2)
    src.name, dst.name = "b", "packed"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    target.emit_grid(b, fn, (lay.panels, lay.groups), lambda b, idx: _group(b, lay, src, dst, *idx))
    return module


def build_pack_kernel(K: int, N: int, isa: str, a_signed: bool = False, features: str | None = None) -> Artifact:
    """An x86 object with the kernel packing a ``[K, N]`` int8 B for ``isa``."""
    target = gemm_target(isa, features)
    data = target.emit_artifact(optimize(str(pack_module(K, N, isa, a_signed, target)), target))
    return Artifact(target=target.name, kind=target.artifact_kind, data=data,
                    signatures=(pack_signature(K, N, isa, a_signed),), target_key=target.cache_key())
