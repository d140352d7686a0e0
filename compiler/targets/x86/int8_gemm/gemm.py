"""The GEMM kernel: a grid of (row blocks, B panels) over the register tiles.

    void @int8_gemm_u8s8_avx512vnni_s32_64x4096x4096(ptr %a, ptr %b_packed, ptr %out, i64 %lo, i64 %hi)

Kernel ABI of docs/kernel-ir.md: buffers ``a [M, K]``, ``b_packed [NP, KG,
nr, 4]``, then ``a_scale [M]``, ``b_scale [N]`` (scaled epilogues), ``bias
[N]`` (``scale_bias``), then ``out [M, N]``; ``[lo, hi)`` is a range of the
row-major grid ``(ceil(M / mb), NP)`` that the runtime splits across threads.
A grid point computes rows ``[i*mb, i*mb + mb)`` of one panel of columns:
``mb / mr`` register tiles (plus one of ``M % mr`` rows in the last block),
each over all of K. Consecutive points of one thread share a row block of A
(kept in L2 while panels of B stream through); ``mb`` caps that block at
``a_block_bytes`` and balances the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from tessera.compiler.codegen.irbuild import PTR, byte_ptr, counted_loop, i64, umin
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.targets.x86.int8_gemm.isa import IsaPath, get_isa
from tessera.compiler.targets.x86.int8_gemm.microkernel import emit_microkernel
from tessera.compiler.targets.x86.int8_gemm.packing import cdiv, pack_layout
from tessera.compiler.targets.x86.int8_gemm.spec import Int8GemmSpec
from tessera.runtime.signature import BufferSpec, KernelSignature

A_BLOCK_BYTES = 512 * 1024


@dataclass(frozen=True)
class Blocking:
    mb: int
    """Rows of A per grid point (a multiple of the tile's ``mr`` unless it is all of M)."""
    mblocks: int
    panels: int

    @property
    def grid(self) -> tuple[int, int]:
        return (self.mblocks, self.panels)


def choose_blocking(spec: Int8GemmSpec, isa: IsaPath, a_block_bytes: int = A_BLOCK_BYTES) -> Blocking:
    mr = isa.mr
    cap = max(mr, a_block_bytes // spec.K // mr * mr)
    blocks = cdiv(spec.M, cap)
    mb = min(cdiv(cdiv(spec.M, blocks), mr) * mr, cdiv(spec.M, mr) * mr)
    return Blocking(mb=mb, mblocks=cdiv(spec.M, mb), panels=cdiv(spec.N, isa.nr))


def buffer_specs(spec: Int8GemmSpec) -> tuple[BufferSpec, ...]:
    lay = pack_layout(spec.K, spec.N, spec.isa, spec.a_signed)
    bufs = [BufferSpec((spec.M, spec.K), (spec.K, 1), spec.a_dtype), BufferSpec(lay.shape, lay.strides, "int8")]
    if spec.scaled:
        bufs += [BufferSpec((spec.M,), (1,), "float32"), BufferSpec((spec.N,), (1,), "float32")]
    if spec.has_bias:
        bufs.append(BufferSpec((spec.N,), (1,), "float32"))
    bufs.append(BufferSpec((spec.M, spec.N), (spec.N, 1), spec.out_dtype, is_output=True))
    return tuple(bufs)


def signature(spec: Int8GemmSpec) -> KernelSignature:
    return KernelSignature(spec.kernel_name, choose_blocking(spec, get_isa(spec.isa)).grid, buffer_specs(spec))


def _tile_calls(b: ir.IRBuilder, spec: Int8GemmSpec, isa: IsaPath, blk: Blocking, tiles: dict[int, ir.Function],
                ptrs: dict[str, ir.Value], i: ir.Value, j: ir.Value) -> None:
    """One grid point: every register tile of row block ``i`` x panel ``j``."""
    nr, mr = isa.nr, isa.mr
    m0 = b.mul(i, i64(blk.mb), flags=["nuw", "nsw"])
    rows = umin(b, i64(blk.mb), b.sub(i64(spec.M), m0))
    n0 = b.mul(j, i64(nr), flags=["nuw", "nsw"])
    nvalid = umin(b, i64(nr), b.sub(i64(spec.N), n0))
    panel = byte_ptr(b, ptrs["b"], b.mul(j, i64(pack_layout(spec.K, spec.N, spec.isa, spec.a_signed).panel_bytes)))
    null = ir.Constant(PTR, None)

    def call(b: ir.IRBuilder, fn: ir.Function, m: ir.Value) -> None:
        scaled = spec.scaled
        b.call(fn, [
            byte_ptr(b, ptrs["a"], b.mul(m, i64(spec.K))),
            panel,
            byte_ptr(b, ptrs["out"], b.mul(b.add(b.mul(m, i64(spec.N)), n0), i64(4))),
            byte_ptr(b, ptrs["a_scale"], b.mul(m, i64(4))) if scaled else null,
            byte_ptr(b, ptrs["b_scale"], b.mul(n0, i64(4))) if scaled else null,
            byte_ptr(b, ptrs["bias"], b.mul(n0, i64(4))) if spec.has_bias else null,
            nvalid,
        ])

    if mr in tiles:
        full_tiles = b.udiv(rows, i64(mr))

        def one(b: ir.IRBuilder, t: ir.Value, _: list[ir.Value]) -> list[ir.Value]:
            call(b, tiles[mr], b.add(m0, b.mul(t, i64(mr), flags=["nuw", "nsw"])))
            return []

        counted_loop(b, full_tiles, [], one, "tiles")
    rest = [r for r in tiles if r != mr]
    if rest:  # only the last row block has M % mr rows left
        (r,) = rest
        fn = b.function
        tail, done = fn.append_basic_block("tile.rest"), fn.append_basic_block("tile.done")
        left = b.urem(rows, i64(mr)) if mr in tiles else rows
        b.cbranch(b.icmp_signed("!=", left, i64(0)), tail, done)
        b.position_at_end(tail)
        call(b, tiles[r], b.sub(b.add(m0, rows), i64(r)))
        b.branch(done)
        b.position_at_end(done)


def gemm_module(spec: Int8GemmSpec, target: LlvmTarget) -> ir.Module:
    """The LLVM module of ``spec``'s kernel (for ``target``'s triple and data layout)."""
    isa = get_isa(spec.isa)
    blk = choose_blocking(spec, isa)
    module = ir.Module(name=spec.kernel_name)
    module.triple = target.triple
    module.data_layout = target.data_layout
    full, partial = spec.N >= isa.nr, spec.N % isa.nr != 0
    last_rows = spec.M - (blk.mblocks - 1) * blk.mb
    sizes = {isa.mr} if spec.M >= isa.mr else set()
    if last_rows % isa.mr:
        sizes.add(last_rows % isa.mr)
    tiles = {r: emit_microkernel(module, spec, isa, r, f"{spec.kernel_name}.mk{r}", full, partial) for r in sorted(sizes)}

    names = ["a", "b"] + (["a_scale", "b_scale"] if spec.scaled else []) + (["bias"] if spec.has_bias else []) + ["out"]
    fn, bufs = target.declare_kernel(module, spec.kernel_name, len(names))
    for arg, n in zip(bufs, names, strict=True):
        arg.name = n
    ptrs = dict(zip(names, bufs, strict=True))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    target.emit_grid(b, fn, blk.grid, lambda b, idx: _tile_calls(b, spec, isa, blk, tiles, ptrs, *idx))
    return module
