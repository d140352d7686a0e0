"""The NVPTX target: one grid point per CUDA thread.

    define ptx_kernel void @fused_0(ptr addrspace(1) noalias %arg0, ptr addrspace(1) noalias %arg1)
        "nvvm.maxntid"="256" {
      %flat = ctaid.x * ntid.x + tid.x          ; llvm.nvvm.read.ptx.sreg.*
      br (%flat < prod(grid)), %point, %done    ; the bound check
    point:                                      ; de-flattened, innermost grid dim fastest
      %i1 = %flat urem grid[1]
      %i0 = %flat udiv grid[1]
      ...
    }

A cooperative kernel (``codegen/gpu_reductions.py``) runs a block per grid point instead:
``ctaid.x`` is the point, ``tid.x`` the lane, and ``gpu.all_reduce`` a tree in ``.shared``
memory with ``bar.sync`` (:meth:`NVPTXTarget.block_reduce`).

Kernels are entered through LLVM 22's ``ptx_kernel`` calling convention (it
prints ``.entry``; no ``nvvm.annotations`` needed), buffers live in the global
address space with ``noalias``, and ``.maxntid 256`` pins the block size the
runtime launches with (:data:`BLOCK_SIZE`; ``runtime/cuda.py`` reads it back
from the loaded function, so PTX and cubin carry their own launch shape).

``features`` names the GPU: ``"sm_80"`` (default), ``"sm_90"``, optionally with
LLVM features such as ``"sm_90,+ptx80"``; without ``+ptxNN`` LLVM picks the
lowest PTX ISA version the sm allows (7.0 for sm_80, 7.8 for sm_90), which
the CUDA 13 ``ptxas`` and every driver since CUDA 11.8 accept.

The kernel-IR side of the contract is shared by GPU targets:
``codegen/gpu.py::thread_per_point``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.compiler.codegen.errors import CodegenError, UnknownTarget
from tessera.compiler.codegen.llvm_target import BodyEmitter, LlvmTarget, extent
from tessera.compiler.codegen.types import I32, I64

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_SM = "sm_80"
MIN_SM = 75
"""The oldest GPU the CUDA 13 toolchain still builds for."""
BLOCK_SIZE = 256
"""Threads per block: emitted as ``.maxntid``, launched by ``runtime/cuda.py``."""
GLOBAL = 1
"""NVPTX's global address space (``ld.global``/``st.global``)."""
SHARED = 3
"""NVPTX's shared address space (a block's ``.shared`` memory)."""
BARRIER = "llvm.nvvm.barrier.cta.sync.aligned.all"
"""``bar.sync``: LLVM 22's name (``llvm.nvvm.barrier0`` before it)."""

_SM = re.compile(r"^sm_(\d+)[af]?$")
KNOWN_SMS = (75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)
"""The sm numbers of LLVM 22's NVPTX processor table from ``MIN_SM`` on (LLVM
warns and ignores an unknown one; tessera refuses it)."""


def parse_features(features: str | None, cpu: str | None = None) -> tuple[str, str]:
    """``"sm_90,+ptx80"`` -> ``("sm_90", "+ptx80")``; ``cpu`` overrides the sm."""
    sm, llvm_features = DEFAULT_SM, []
    for token in (features or "").split(","):
        token = token.strip()
        if not token:
            continue
        if token.startswith("sm_"):
            sm = token
        elif token[0] in "+-":
            llvm_features.append(token)
        else:
            raise UnknownTarget(f"ptx features {features!r}: expected an sm (sm_80, sm_90) or +/-feature such as +ptx80, "
                                f"not {token!r}")
    sm = cpu or sm
    m = _SM.match(sm)
    if m is None or int(m.group(1)) < MIN_SM:
        raise UnknownTarget(f"ptx target {sm!r}: expected sm_{MIN_SM} or newer, e.g. sm_80 or sm_90")
    if int(m.group(1)) not in KNOWN_SMS:
        raise UnknownTarget(f"ptx target {sm!r}: not a GPU LLVM knows (sm_{', sm_'.join(map(str, KNOWN_SMS))})")
    return sm, ",".join(llvm_features)


def sm_number(sm: str) -> int:
    """``"sm_90a"`` -> 90."""
    m = _SM.match(sm)
    if m is None:
        raise UnknownTarget(f"not an sm: {sm!r}")
    return int(m.group(1))


class NVPTXTarget(LlvmTarget):
    """NVIDIA GPUs through LLVM's NVPTX backend (PTX text; ``ptxas`` makes cubins)."""

    name = "ptx"
    artifact_kind = "ptx"
    triple = NVPTX_TRIPLE
    block_size = BLOCK_SIZE

    def __init__(self, features: str | None = None, cpu: str | None = None):
        self.cpu, self.features = parse_features(features, cpu)
        self.native_f16_convert = True  # cvt.rn.f16.f32 / cvt.f32.f16
        self.native_bf16_convert = sm_number(self.cpu) >= 80  # cvt.rn.bf16.f32 (keeps subnormals)

    def string_function_attributes(self) -> dict[str, str]:
        return {"nvvm.maxntid": str(self.block_size)}

    def buffer_pointer_type(self) -> ir.PointerType:
        return ir.PointerType(addrspace=GLOBAL)

    def declare_kernel(self, module: ir.Module, name: str, num_buffers: int,
                       num_dims: int = 0) -> tuple[ir.Function, list[ir.Value]]:
        """Buffers, then a dynamic kernel's sizes and strides as ``i64`` parameters."""
        fnty = ir.FunctionType(ir.VoidType(), [self.buffer_pointer_type()] * num_buffers + [I64] * num_dims)
        fn = ir.Function(module, fnty, name=name)
        fn.calling_convention = "ptx_kernel"
        for i, a in enumerate(fn.args[:num_buffers]):
            a.name = f"arg{i}"
            a.add_attribute("noalias")
        for k, a in enumerate(fn.args[num_buffers:]):
            a.name = f"dim{k}"
        return fn, list(fn.args[:num_buffers])

    def read_dims(self, builder: ir.IRBuilder, fn: ir.Function, num_buffers: int, num_dims: int) -> list[ir.Value]:
        return list(fn.args[num_buffers:num_buffers + num_dims])

    def emit_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value],
                  body: BodyEmitter, vectorize: bool = True) -> None:
        total, ity = _grid_total(builder, grid)
        ctaid, ntid, tid = (_sreg(builder, f"llvm.nvvm.read.ptx.sreg.{r}.x") for r in ("ctaid", "ntid", "tid"))
        if ity is I64:
            ctaid, ntid, tid = (builder.zext(v, I64) for v in (ctaid, ntid, tid))
        flat = builder.add(builder.mul(ctaid, ntid, flags=["nuw"]), tid, flags=["nuw"], name="flat")
        _walk_point(builder, fn, grid, flat, total, ity, body)

    def emit_block_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value],
                        body: BodyEmitter, threads: int) -> None:
        """A block per grid point: ``ctaid.x`` is the point (the bound check is uniform over the
        block, so every lane reaches each barrier), ``tid.x`` the lane (:meth:`lane_index`)."""
        if threads != self.block_size:
            raise CodegenError(f"a cooperative kernel runs {self.block_size} threads per point, not {threads}")
        total, ity = _grid_total(builder, grid)
        point = _sreg(builder, "llvm.nvvm.read.ptx.sreg.ctaid.x")
        _walk_point(builder, fn, grid, builder.zext(point, I64) if ity is I64 else point, total, ity, body)

    def lane_index(self, builder: ir.IRBuilder) -> ir.Value:
        return builder.zext(_sreg(builder, "llvm.nvvm.read.ptx.sreg.tid.x"), I64)

    def block_reduce(self, em: KernelEmitter, value: ir.Value,
                     combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
        """A tree over shared memory: each lane stores its value, then ``log2(block)`` halving
        steps fold the upper half into the lower, a barrier after each; every lane reads slot 0
        (and a last barrier lets the kernel's next reduction reuse the slots: one array per
        element type and kernel).

            store %v, slots[tid]; barrier
            if tid < 128: slots[tid] = combine(slots[tid], slots[tid + 128]); barrier   ... 64, ..., 1
            %r = load slots[0]; barrier
        """
        b, n = em.b, self.block_size
        name = f"{em.name}.lanes.{value.type}"
        slots = em.module.globals.get(name)
        if slots is None:
            array = ir.ArrayType(value.type, n)
            slots = ir.GlobalVariable(em.module, array, name, addrspace=SHARED)
            slots.linkage = "internal"
            slots.initializer = ir.Constant(array, ir.Undefined)
            slots.align = 8
            slots.type = ir.PointerType(addrspace=SHARED)  # LLVM 22 reads opaque pointers only
        tid = _sreg(b, "llvm.nvvm.read.ptx.sreg.tid.x")

        def slot(i: ir.Value) -> ir.Value:
            return b.gep(slots, [i], inbounds=True, source_etype=value.type)

        b.store(value, slot(tid))
        _barrier(b)
        step = n // 2
        while step >= 1:
            with b.if_then(b.icmp_unsigned("<", tid, ir.Constant(I32, step))):
                mine, other = slot(tid), slot(b.add(tid, ir.Constant(I32, step), flags=["nuw"]))
                b.store(combine(b.load(mine, typ=value.type), b.load(other, typ=value.type)), mine)
            _barrier(b)
            step //= 2
        total = b.load(slots, typ=value.type)
        _barrier(b)
        return total

    def emit_assembly(self, module: llvm.ModuleRef) -> str:
        _check_no_external_calls(module)
        return self.target_machine.emit_assembly(module)

    def emit_artifact(self, module: llvm.ModuleRef) -> bytes:
        """The PTX text (what the CUDA driver JIT-compiles for the device it runs on)."""
        return self.emit_assembly(module).encode()


def _grid_total(builder: ir.IRBuilder, grid: Sequence[int | ir.Value]) -> tuple[int | ir.Value, ir.IntType]:
    """The number of grid points, and the index type: 32-bit when the grid is static and
    allows it (64-bit division is a long sequence on GPUs)."""
    total: int | ir.Value = 1
    for g in grid:
        total = total * g if isinstance(total, int) and isinstance(g, int) else \
            builder.mul(extent(total), extent(g), flags=["nuw"])
    return total, (I32 if isinstance(total, int) and total < 2**31 else I64)


def _walk_point(builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value], flat: ir.Value,
                total: int | ir.Value, ity: ir.IntType, body: BodyEmitter) -> None:
    """``if (flat < total)``: ``flat`` de-flattened (innermost grid dim fastest), then ``body``."""
    point = fn.append_basic_block("grid.point")
    done = fn.append_basic_block("grid.done")
    builder.cbranch(builder.icmp_unsigned("<", flat, extent(total, ity)), point, done)
    builder.position_at_end(point)
    indices: list[ir.Value] = []
    rest = flat
    for k, g in enumerate(reversed(grid)):
        outermost = k == len(grid) - 1
        idx = rest if outermost else builder.urem(rest, extent(g, ity))
        if not outermost:
            rest = builder.udiv(rest, extent(g, ity))
        indices.append(idx if ity is I64 else builder.zext(idx, I64))
    indices.reverse()
    body(builder, indices)
    builder.branch(done)
    builder.position_at_end(done)
    builder.ret_void()


def _barrier(b: ir.IRBuilder) -> None:
    """``bar.sync 0``: every thread of the block waits here."""
    fn = b.module.globals.get(BARRIER)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ir.VoidType(), [I32]), name=BARRIER)
    b.call(fn, [ir.Constant(I32, 0)])


def _sreg(b: ir.IRBuilder, name: str) -> ir.Value:
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(I32, []), name=name)
    return b.call(fn, [])


def _check_no_external_calls(module: llvm.ModuleRef) -> None:
    """No libdevice here: a kernel may call LLVM intrinsics only (f64 ``exp`` & co. have no inline form)."""
    missing = sorted(f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm."))
    if missing:
        raise CodegenError(f"the ptx target has no math library (libdevice): kernels call {', '.join('@' + m for m in missing)}"
                           " (f64 transcendentals are not supported on ptx)")
