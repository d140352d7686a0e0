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

Kernels are entered through LLVM 22's ``ptx_kernel`` calling convention (it
prints ``.entry``; no ``nvvm.annotations`` needed), buffers live in the global
address space with ``noalias``, and ``.maxntid 256`` pins the block size the
runtime launches with (:data:`BLOCK_SIZE`; ``runtime/cuda.py`` reads it back
from the loaded function, so PTX and cubin carry their own launch shape).

``features`` names the GPU: ``"sm_80"`` (default), ``"sm_90"``, optionally with
LLVM features such as ``"sm_90,+ptx80"``; without ``+ptxNN`` LLVM picks the
lowest PTX ISA version the sm allows (7.0 for sm_80, 7.8 for sm_90), which
the CUDA 13 ``ptxas`` and every driver since CUDA 11.8 accept.

:func:`thread_per_point` is the kernel-IR side of the contract: the lowering
walks a pointwise kernel's contiguous dim in a serial ``scf.for`` (right for a
CPU core, wrong for a GPU warp); on GPUs that loop becomes the innermost grid
dim, so adjacent threads touch adjacent elements (a channels-last tensor is
read along C, 32 consecutive floats per warp).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import llvmlite.binding as llvm
from llvmlite import ir
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region

from tessera.compiler.codegen.errors import CodegenError, UnknownTarget
from tessera.compiler.codegen.kernel_form import constant_index, kernel_functions
from tessera.compiler.codegen.target import BodyEmitter, Target
from tessera.compiler.codegen.types import I32, I64

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_SM = "sm_80"
MIN_SM = 75
"""The oldest GPU the CUDA 13 toolchain still builds for."""
BLOCK_SIZE = 256
"""Threads per block: emitted as ``.maxntid``, launched by ``runtime/cuda.py``."""
GLOBAL = 1
"""NVPTX's global address space (``ld.global``/``st.global``)."""

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


class NVPTXTarget(Target):
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

    def declare_kernel(self, module: ir.Module, name: str, num_buffers: int) -> tuple[ir.Function, list[ir.Value]]:
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [self.buffer_pointer_type()] * num_buffers), name=name)
        fn.calling_convention = "ptx_kernel"
        for i, a in enumerate(fn.args):
            a.name = f"arg{i}"
            a.add_attribute("noalias")
        return fn, list(fn.args)

    def emit_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int], body: BodyEmitter) -> None:
        total = 1
        for g in grid:
            total *= g
        # 32-bit index math when the grid allows it (64-bit division is a long sequence on GPUs).
        ity = I32 if total < 2**31 else I64
        ctaid, ntid, tid = (_sreg(builder, f"llvm.nvvm.read.ptx.sreg.{r}.x") for r in ("ctaid", "ntid", "tid"))
        if ity is I64:
            ctaid, ntid, tid = (builder.zext(v, I64) for v in (ctaid, ntid, tid))
        flat = builder.add(builder.mul(ctaid, ntid, flags=["nuw"]), tid, flags=["nuw"], name="flat")
        point = fn.append_basic_block("grid.point")
        done = fn.append_basic_block("grid.done")
        builder.cbranch(builder.icmp_unsigned("<", flat, ir.Constant(ity, total)), point, done)

        builder.position_at_end(point)
        indices: list[ir.Value] = []
        rest = flat
        for k, g in enumerate(reversed(grid)):
            outermost = k == len(grid) - 1
            idx = rest if outermost else builder.urem(rest, ir.Constant(ity, g))
            if not outermost:
                rest = builder.udiv(rest, ir.Constant(ity, g))
            indices.append(idx if ity is I64 else builder.zext(idx, I64))
        indices.reverse()
        body(builder, indices)
        builder.branch(done)
        builder.position_at_end(done)
        builder.ret_void()

    def emit_assembly(self, module: llvm.ModuleRef) -> str:
        _check_no_external_calls(module)
        return self.target_machine.emit_assembly(module)

    def emit_artifact(self, module: llvm.ModuleRef) -> bytes:
        """The PTX text (what the CUDA driver JIT-compiles for the device it runs on)."""
        return self.emit_assembly(module).encode()


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


# -- kernel IR: one thread per point ---------------------------------------------------------
def thread_per_point(kernels: ModuleOp) -> ModuleOp:
    """A copy of ``kernels`` in which each kernel whose parallel body ends in a
    plain counted loop (``scf.for %j = 0 to N step 1``, no ``iter_args``) has
    that loop as its innermost grid dim, and grid dims of extent 1 dropped:

        scf.parallel (%h, %w) = (0, 0) to (4, 4) { scf.for %c = 0 to 8 { B } }
     -> scf.parallel (%h, %w, %c) = (0, 0, 0) to (4, 4, 8) { B }

    Reduction kernels (their loops carry accumulators) keep their loops: one
    thread per output element."""
    out = kernels.clone()
    for fn in kernel_functions(out):
        par = next((op for op in fn.body.block.ops if isinstance(op, scf.ParallelOp)), None)
        if par is not None:
            _fold_inner_loop(fn.body.block, par)
    return out


def _counted_loop(par: scf.ParallelOp) -> tuple[scf.ForOp, int] | None:
    ops = list(par.body.block.ops)
    if len(ops) < 2 or not isinstance(ops[-1], scf.ReduceOp) or not isinstance(ops[-2], scf.ForOp):
        return None
    loop = ops[-2]
    if loop.iter_args or loop.results or constant_index(loop.lb) != 0 or constant_index(loop.step) != 1:
        return None
    upper = constant_index(loop.ub)
    if upper is None or upper < 1:
        return None
    # what precedes the loop is recomputed by every thread: only side-effect free ops
    if any(op.regions or not _pure(op.name) for op in ops[:-2]):
        return None
    return loop, upper


def _pure(name: str) -> bool:
    return name == "memref.load" or name.startswith(("arith.", "math."))


def _fold_inner_loop(entry: Block, par: scf.ParallelOp) -> None:
    found = _counted_loop(par)
    if found is None or any(constant_index(v) is None for v in par.upperBound):
        return
    loop, upper = found
    grid = [constant_index(v) for v in par.upperBound]
    kept = [i for i, g in enumerate(grid) if g != 1]
    new_grid = [grid[i] for i in kept] + [upper]
    consts: dict[int, arith.ConstantOp] = {}

    def index_const(n: int):
        if n not in consts:
            consts[n] = arith.ConstantOp(IntegerAttr(n, IndexType()))
            entry.insert_op_before(consts[n], par)
        return consts[n].result

    old = par.body.block
    new = Block(arg_types=[IndexType()] * len(new_grid))
    for i, arg in enumerate(old.args):
        arg.replace_all_uses_with(new.args[kept.index(i)] if i in kept else index_const(0))
    for op in list(old.ops)[:-2]:
        op.detach()
        new.add_op(op)
    body = loop.body.block
    body.args[0].replace_all_uses_with(new.args[-1])
    for op in list(body.ops):
        op.detach()
        if isinstance(op, scf.YieldOp):
            op.erase()
        else:
            new.add_op(op)
    new.add_op(scf.ReduceOp())
    bounds = [index_const(g) for g in new_grid]
    folded = scf.ParallelOp([index_const(0)] * len(new_grid), bounds, [index_const(1)] * len(new_grid), Region(new))
    entry.insert_op_before(folded, par)
    par.detach()
    par.erase(safe_erase=False)
