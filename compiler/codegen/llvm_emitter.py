"""Kernel IR (func/scf/arith/math/memref) to LLVM IR, shared by every target.

    func.func @k(%x: memref<64xf32>, %y: memref<64xf32>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>}
      scf.parallel (%i) = (%c0) to (%c64) step (%c1) { %v = memref.load %x[%i] ... }
 ->
    define void @k(ptr noalias %arg0, ptr noalias %arg1, i64 %lo, i64 %hi) nounwind { ... }

The target (``target.LlvmTarget``) supplies the entry signature and the walk over
the grid; this module emits everything inside one grid point: ``scf.for`` as a
counted loop whose ``iter_args`` are phis, ``scf.if`` as a diamond with phis,
and ``arith``/``math``/``memref`` ops through their lowering tables.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir
from xdsl.dialects import gpu, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from tessera.compiler.codegen import lower_arith, lower_gpu, lower_logistic, lower_math, lower_memref, lower_vector
from tessera.compiler.codegen.convert import convert_float
from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.kernel_form import KernelForm, analyze_module, sizes_of, static_strides
from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.types import I8, I64, llvm_type
from tessera.compiler.ir_io import op_location
from tessera.runtime.signature import DYNAMIC

LOWERINGS = {**lower_arith.LOWERINGS, **lower_logistic.LOWERINGS, **lower_math.LOWERINGS, **lower_memref.LOWERINGS,
             **lower_vector.LOWERINGS, **lower_gpu.LOWERINGS}


def emit_module(kernels: ModuleOp, target: LlvmTarget, name: str = "tessera_kernels") -> ir.Module:
    """An LLVM module with one entry function per ``tsr.kernel`` function."""
    module = ir.Module(name=name)
    module.triple = target.triple
    module.data_layout = target.data_layout
    for form in analyze_module(kernels):
        KernelEmitter(module, target, form).emit()
    return module


class KernelEmitter:
    """Emits one kernel. ``b`` is the current builder; ``values`` maps SSA
    values of the kernel IR to LLVM values."""

    def __init__(self, module: ir.Module, target: LlvmTarget, form: KernelForm):
        self.module = module
        self.target = target
        self.form = form
        self.name = form.name
        self.values: dict[SSAValue, ir.Value] = {}

    # -- driver --------------------------------------------------------------------------
    def emit(self) -> ir.Function:
        types = self.form.arg_types
        slots = self.form.signature.dim_slots  # the dims array the runtime fills, in its order
        fn, pointers = self.target.declare_kernel(self.module, self.name, len(types), len(slots))
        for attr in self.target.function_attributes():
            fn.attributes.add(attr)
        for key, value in self.target.string_function_attributes().items():
            set.add(fn.attributes, f'"{key}"="{value}"')  # llvmlite only knows enum attributes
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.b = ir.IRBuilder(start)
        dims = self.target.read_dims(ir.IRBuilder(self.entry), fn, len(types), len(slots)) if slots else []
        self._dims: dict[int, dict[tuple[bool, int], ir.Value]] = {id(p): {} for p in pointers}
        for value, (i, size, d) in zip(dims, slots):  # (is a size, dim) -> its value
            self._dims[id(pointers[i])][(size, d)] = value
        for arg, ptr in zip(self.form.func.body.block.args, pointers, strict=True):
            self.values[arg] = ptr
        grid = [g if isinstance(g, int) else self._extent(pointers[g[0]], types[g[0]], *g[1:])
                for g in self.form.signature.grid]
        for op in self.form.func.body.block.ops:
            if op is self.form.parallel and self.form.signature.threads_per_point > 1:
                self.target.emit_block_grid(self.b, fn, grid, self._grid_point, self.form.signature.threads_per_point)
            elif op is self.form.parallel:
                loops = any(isinstance(inner, scf.ForOp) for inner in op.walk())
                self.target.emit_grid(self.b, fn, grid, self._grid_point, vectorize=not loops)
            elif op.name != "func.return":
                self.emit_op(op)
        ir.IRBuilder(self.entry).branch(start)
        return fn

    def _grid_point(self, builder: ir.IRBuilder, indices: Sequence[ir.Value]) -> None:
        self.b = builder
        block = self.form.parallel.body.block
        for arg, idx in zip(block.args, indices, strict=True):
            self.values[arg] = idx
        self.emit_block(block)

    # -- helpers used by the lowering tables ---------------------------------------------
    def convert(self, x: ir.Value, to: ir.Type) -> ir.Value:
        return convert_float(self.b, x, to, self.target.native_f16_convert, self.target.native_bf16_convert)

    def size_of(self, base: ir.Value, t: MemRefType, d: int) -> ir.Value:
        """The size of the memref argument ``base`` (of type ``t``) along ``d``."""
        n = sizes_of(t)[d]
        return ir.Constant(I64, n) if n != DYNAMIC else self._dims[id(base)][(True, d)]

    def _extent(self, base: ir.Value, t: MemRefType, d: int, tile: int = 1, last: int | None = None) -> ir.Value:
        """A dynamic grid extent: the size of ``base`` along ``d`` (times its sizes
        along the dims after it up to ``last``) in ``tile``-wide tiles, rounded up."""
        n = self._size_product(base, t, range(d, d + 1 if last is None else last + 1))
        return n if tile == 1 else self.b.udiv(self.b.add(n, ir.Constant(I64, tile - 1)), ir.Constant(I64, tile))

    def _size_product(self, base: ir.Value, t: MemRefType, dims: Sequence[int]) -> ir.Value:
        """The product of ``base``'s sizes along ``dims`` (a merged row)."""
        n = self.size_of(base, t, dims[0])
        for d in dims[1:]:
            n = self.b.mul(n, self.size_of(base, t, d), flags=["nsw"])
        return n

    def strides_of(self, base: ir.Value, t: MemRefType) -> list[int | ir.Value]:
        """The strides of the memref ``base`` points to: numbers, and the run-time
        values of a kernel argument's dynamic strides."""
        return [s if s != DYNAMIC else self._dims[id(base)][(False, d)] for d, s in enumerate(static_strides(t))]

    def merged_view(self, base: ir.Value, t: MemRefType, groups: Sequence[Sequence[int]]) -> ir.Value:
        """``base`` (of type ``t``) with each group of consecutive dims merged into
        one (``memref.collapse_shape``): its size the product of theirs, its stride
        the group's innermost. A new pointer value, so that its sizes and strides
        are its own."""
        view = self.b.gep(base, [ir.Constant(I64, 0)], inbounds=True, source_etype=I8)
        strides = self.strides_of(base, t)
        dims: dict[tuple[bool, int], ir.Value] = {}
        for k, group in enumerate(groups):
            dims[(True, k)] = self._size_product(base, t, group)
            if isinstance(strides[group[-1]], ir.Value):
                dims[(False, k)] = strides[group[-1]]
        self._dims[id(view)] = dims
        return view

    def entry_alloca(self, element: ir.Type, count: int) -> ir.Value:
        """``count`` elements of stack scratch, allocated once per call in the entry block."""
        with self.b.goto_block(self.entry):
            return self.b.alloca(element, size=ir.Constant(I64, count))

    # -- ops -----------------------------------------------------------------------------
    def emit_block(self, block: Block) -> list[ir.Value]:
        """Emits ``block``'s ops; returns the operands of its terminator (``scf.yield``, ``gpu.yield``)."""
        for op in block.ops:
            if isinstance(op, (scf.YieldOp, scf.ReduceOp, gpu.YieldOp)):
                if isinstance(op, scf.ReduceOp) and op.operands:
                    raise CodegenError(f"kernel @{self.name}: scf.reduce with operands is not supported")
                return [self.values[v] for v in op.operands]
            self.emit_op(op)
        return []

    def emit_op(self, op: Operation) -> None:
        if isinstance(op, scf.ForOp):
            results = self._for(op)
        elif isinstance(op, scf.IfOp):
            results = self._if(op)
        else:
            lower = LOWERINGS.get(op.name)
            if lower is None:
                raise CodegenError(f"kernel @{self.name}: '{op.name}' is not supported by the {self.target.name} emitter",
                                   op_location(op))
            results = lower(self, op, [self.values[v] for v in op.operands])
        for r, v in zip(op.results, results, strict=True):
            self.values[r] = v

    def _for(self, op: scf.ForOp) -> list[ir.Value]:
        b, fn = self.b, self.fn
        lb, ub, step = (self.values[v] for v in (op.lb, op.ub, op.step))
        inits = [self.values[v] for v in op.iter_args]
        if lb.type != I64:
            raise CodegenError(f"kernel @{self.name}: scf.for over {op.lb.type} is not supported (index only)")
        pre = b.block
        header = fn.append_basic_block("for.header")
        body = fn.append_basic_block("for.body")
        exit_ = fn.append_basic_block("for.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name="iv")
        iv.add_incoming(lb, pre)
        carried = []
        for init in inits:
            phi = b.phi(init.type)
            phi.add_incoming(init, pre)
            carried.append(phi)
        b.cbranch(b.icmp_signed("<", iv, ub), body, exit_)
        b.position_at_end(body)
        block = op.body.block
        self.values[block.args[0]] = iv
        for arg, phi in zip(block.args[1:], carried, strict=True):
            self.values[arg] = phi
        yielded = self.emit_block(block)
        b = self.b
        nxt = b.add(iv, step, flags=["nsw"])
        latch = b.block
        b.branch(header)
        iv.add_incoming(nxt, latch)
        for phi, v in zip(carried, yielded, strict=True):
            phi.add_incoming(v, latch)
        b.position_at_end(exit_)
        return carried

    def _if(self, op: scf.IfOp) -> list[ir.Value]:
        b, fn = self.b, self.fn
        cond = self.values[op.cond]
        then_bb = fn.append_basic_block("if.then")
        else_bb = fn.append_basic_block("if.else")
        merge = fn.append_basic_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        arms = []
        for bb, region in ((then_bb, op.true_region), (else_bb, op.false_region)):
            self.b.position_at_end(bb)
            values = self.emit_block(region.block) if region.blocks else []
            arms.append((values, self.b.block))
            self.b.branch(merge)
        self.b.position_at_end(merge)
        results = []
        for i, r in enumerate(op.results):
            phi = self.b.phi(llvm_type(r.type))
            for values, bb in arms:
                phi.add_incoming(values[i], bb)
            results.append(phi)
        return results
