"""Checks a kernel function against the kernel IR contract and reads its
signature (docs/kernel-ir.md).

    func.func @k(%x: memref<4x8xf32>, %y: memref<4x8xf32>)
        attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
      %c0 = arith.constant 0 : index
      ...
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) { ... scf.reduce }
      func.return
    }

gives grid ``(4,)`` and ``args[1].is_output``. An argument may name a torch
dtype its element type cannot (``ui8`` stored as ``i8``) with the argument
attribute ``{tsr.dtype = ui8}``.

Sizes and strides may be dynamic (``memref<?x8xf32, strided<[?, 1]>>``): the
kernel takes them at run time (``runtime/signature.py``), and a grid extent may
be the size of an argument, ``memref.dim %arg, %cK`` ahead of the parallel loop,
or the number of ``t``-wide tiles covering it (a tiled kernel's grid):

    %n = memref.dim %y, %c0 : memref<?x8xf32>
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {...}      // grid ((1, 0),)
    %t = arith.divui (arith.addi %n, %c7), %c8
    scf.parallel (%i) = (%c0) to (%t) step (%c1) {...}      // grid ((1, 0, 8),)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
)
from xdsl.ir import Attribute, BlockArgument, SSAValue

from tessera.compiler.codegen.errors import CodegenError
from tessera.dialects.tsr import dtypes
from tessera.runtime.signature import DYNAMIC, BufferSpec, GridDim, KernelSignature

KERNEL_ATTR = "tsr.kernel"
OUTPUTS_ATTR = "tsr.outputs"
DTYPE_ARG_ATTR = "tsr.dtype"
THREADS_ATTR = "tsr.threads_per_point"
"""A kernel attribute: the threads (a GPU block) that compute each grid point together."""


@dataclass(frozen=True)
class KernelForm:
    """A checked kernel: its function, signature and top-level parallel loop."""

    func: func.FuncOp
    signature: KernelSignature
    parallel: scf.ParallelOp
    arg_types: tuple[MemRefType, ...]

    @property
    def name(self) -> str:
        return self.signature.name


def kernel_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The ``tsr.kernel`` functions of a kernels module, in order."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes]


def analyze_module(module: ModuleOp) -> list[KernelForm]:
    forms = [analyze_kernel(f) for f in kernel_functions(module)]
    if not forms:
        raise CodegenError("the kernels module holds no function with the 'tsr.kernel' attribute")
    return forms


def kernel_signatures(module: ModuleOp) -> list[KernelSignature]:
    return [f.signature for f in analyze_module(module)]


def analyze_kernel(fn: func.FuncOp) -> KernelForm:
    name = fn.sym_name.data
    where = f"kernel @{name}"
    if fn.function_type.outputs.data:
        raise CodegenError(f"{where}: a kernel returns no results")
    if fn.body.blocks.first is None:
        raise CodegenError(f"{where}: a kernel needs a body")
    types = tuple(fn.function_type.inputs.data)
    for i, t in enumerate(types):
        _check_memref(t, f"{where}: argument #{i}")
    outputs = _outputs(fn, len(types), where)
    parallel = _top_level_parallel(fn, where)
    grid = _grid(parallel, where)
    _check_stores(fn, outputs, where)
    _check_grid_fits(parallel, grid, where)
    rows = _merged_rows(fn, where)
    args = tuple(
        BufferSpec(sizes_of(t), static_strides(t), _dtype_name(fn, i, t, where), i in outputs, rows.get(i, ()))
        for i, t in enumerate(types)
    )
    return KernelForm(fn, KernelSignature(name, grid, args, _threads_per_point(fn, where)), parallel, types)


def sizes_of(t: MemRefType) -> tuple[int, ...]:
    """The sizes of ``t``, ``DYNAMIC`` (-1, the runtime's spelling) where known only at run time."""
    return tuple(DYNAMIC if n == DYNAMIC_INDEX else n for n in t.get_shape())


def static_strides(t: MemRefType) -> tuple[int, ...]:
    """The strides of ``t``, ``DYNAMIC`` (-1) where known only at run time."""
    return tuple(DYNAMIC if s is None else int(s) for s in t.get_strides())


def _check_memref(t: Attribute, where: str) -> None:
    if not isinstance(t, MemRefType):
        raise CodegenError(f"{where}: kernel arguments are memrefs, got {t}")
    if any(d < 0 and d != DYNAMIC for d in sizes_of(t)):
        raise CodegenError(f"{where}: memref sizes must be non-negative or '?', got {t}")
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        if not isinstance(layout.offset, IntAttr) or layout.offset.data != 0:
            raise CodegenError(f"{where}: strides must have offset 0, got {layout}")
    elif not isinstance(layout, NoneAttr):
        raise CodegenError(f"{where}: layout must be strided<[...]> or the identity, got {layout}")


def _outputs(fn: func.FuncOp, nargs: int, where: str) -> frozenset[int]:
    attr = fn.attributes.get(OUTPUTS_ATTR)
    if not isinstance(attr, DenseArrayBase):
        raise CodegenError(f"{where}: needs '{OUTPUTS_ATTR} = array<i64: ...>' naming its output arguments")
    outs = frozenset(int(v) for v in attr.get_values())
    bad = sorted(o for o in outs if not 0 <= o < nargs)
    if bad:
        raise CodegenError(f"{where}: '{OUTPUTS_ATTR}' names arguments {bad}, but the kernel has {nargs}")
    return outs


def _threads_per_point(fn: func.FuncOp, where: str) -> int:
    """``tsr.threads_per_point`` (``codegen/gpu_reductions.py``), 1 where absent."""
    attr = fn.attributes.get(THREADS_ATTR)
    if attr is None:
        return 1
    if not isinstance(attr, IntegerAttr) or attr.value.data < 1:
        raise CodegenError(f"{where}: '{THREADS_ATTR}' must be a positive integer, got {attr}")
    return attr.value.data


def _top_level_parallel(fn: func.FuncOp, where: str) -> scf.ParallelOp:
    ops = list(fn.body.block.ops)
    parallels = [op for op in ops if isinstance(op, scf.ParallelOp)]
    if len(parallels) != 1:
        raise CodegenError(f"{where}: the body needs exactly one top-level scf.parallel, found {len(parallels)}")
    if not isinstance(ops[-1], func.ReturnOp) or ops[-2] is not parallels[0]:
        raise CodegenError(f"{where}: the body must end with the scf.parallel and func.return")
    stray = [op.name for op in ops[:-2]
             if not op.name.startswith("arith.") and op.name not in ("memref.alloca", "memref.dim", "memref.collapse_shape")]
    if stray:
        raise CodegenError(f"{where}: only arith ops, memref.dim, memref.collapse_shape and memref.alloca may precede "
                           f"the scf.parallel, found {stray[0]}")
    if parallels[0].initVals:
        raise CodegenError(f"{where}: the top-level scf.parallel may not reduce (it has init values)")
    return parallels[0]


def constant_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def argument_dim(v: SSAValue) -> tuple[int, int] | None:
    """``(arg, dim)`` when ``v`` is ``memref.dim`` of a kernel argument at a constant dim
    (whose size is dynamic: the lowering gives a static size as a constant)."""
    op = v.owner
    if isinstance(op, memref.DimOp) and isinstance(op.source, BlockArgument) \
            and isinstance(op.source.owner.parent_op(), func.FuncOp) and (d := constant_index(op.index)) is not None:
        return op.source.index, d
    return None


def _grid(par: scf.ParallelOp, where: str) -> tuple[GridDim, ...]:
    for what, vals, want in (("lower bounds", par.lowerBound, 0), ("steps", par.step, 1)):
        if any(constant_index(v) != want for v in vals):
            raise CodegenError(f"{where}: scf.parallel {what} must be constant {want}")
    grid: list[GridDim] = []
    for v in par.upperBound:
        g = constant_index(v)
        extent: GridDim | None = g if g is not None and g >= 0 else argument_dim(v) or tiles_of_dim(v)
        if isinstance(extent, tuple):
            sizes = sizes_of(_arg_type(par, extent[0]))
            merged = sizes[extent[1]:extent[3] + 1] if len(extent) == 4 else [sizes[extent[1]]]
            if DYNAMIC not in merged:  # the dims of static sizes
                n = math.prod(merged)
                extent = n if len(extent) == 2 else -(-n // extent[2])
        if extent is None:
            raise CodegenError(f"{where}: scf.parallel upper bounds (the grid) must be non-negative constants, "
                               "memref.dim of an argument, or its tiles ((dim + t - 1) / t)")
        grid.append(extent)
    return tuple(grid)


def _arg_type(par: scf.ParallelOp, arg: int) -> MemRefType:
    """The type of the kernel's argument ``arg`` (``par``: its top-level parallel loop)."""
    return cast(func.FuncOp, par.parent_op()).function_type.inputs.data[arg]


def tiles_of_dim(v: SSAValue) -> tuple[int, int, int] | tuple[int, int, int, int] | None:
    """``(arg, dim, t)`` when ``v`` is ``(memref.dim(arg, dim) + t - 1) / t`` (a tile grid's
    extent); ``(arg, dim, t, last)`` when the size is a product of ``memref.dim``s of
    one argument along dims ``dim`` to ``last`` (a merged row, ``lowering/row_dims.py``)."""
    op = v.owner
    if not isinstance(op, arith.DivUIOp) or (t := constant_index(op.rhs)) is None or t < 1:
        return None
    add = op.lhs.owner
    if not isinstance(add, arith.AddiOp) or constant_index(add.rhs) != t - 1:
        return None
    dim = argument_dim(add.lhs)
    if dim is not None:
        return (*dim, t)
    dims = _product_of_dims(add.lhs)
    if dims is None or len({a for a, _ in dims}) != 1 or [d for _, d in dims] != list(range(dims[0][1], dims[-1][1] + 1)):
        return None
    return dims[0][0], dims[0][1], t, dims[-1][1]


def _product_of_dims(v: SSAValue) -> list[tuple[int, int]] | None:
    """The ``(arg, dim)`` of each ``memref.dim`` factor of a product (``arith.muli``) of them, in order."""
    op = v.owner
    if isinstance(op, arith.MuliOp):
        a, b = _product_of_dims(op.lhs), _product_of_dims(op.rhs)
        return None if a is None or b is None else a + b
    dim = argument_dim(v)
    return None if dim is None else [dim]


def _grid_offset(v: SSAValue, ivs: dict[SSAValue, int]) -> tuple[int, int] | None:
    """``(grid dim, constant)`` when ``v`` is a grid index plus a constant."""
    if v in ivs:
        return ivs[v], 0
    op = v.owner
    if isinstance(op, arith.AddiOp):
        for iv, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = constant_index(c)
            if iv in ivs and k is not None:
                return ivs[iv], k
    if isinstance(op, arith.SubiOp) and op.lhs in ivs and (k := constant_index(op.rhs)) is not None:
        return ivs[op.lhs], -k
    return None


def _check_grid_fits(par: scf.ParallelOp, grid: tuple[GridDim, ...], where: str) -> None:
    """A load or store indexed by a grid index (plus a constant), outside any
    ``scf.if``, must stay inside its memref for every grid point: a grid that
    runs past a buffer is refused, not emitted.

        scf.parallel (%i) = (%c0) to (%c8) ...  memref.load %x[%i] : memref<4xf32>   // refused
    """
    ivs = {a: d for d, a in enumerate(par.body.block.args)}
    for op in par.walk():
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or _inside_if(op, par):
            continue
        shape = sizes_of(op.memref.type)
        for i, index in enumerate(op.indices):
            hit = _grid_offset(index, ivs)
            if hit is None or not isinstance(grid[hit[0]], int) or not grid[hit[0]] or shape[i] == DYNAMIC:
                continue
            lo, hi = hit[1], grid[hit[0]] - 1 + hit[1]
            if lo < 0 or hi >= shape[i]:
                raise CodegenError(f"{where}: '{op.name}' index #{i} runs from {lo} to {hi} over the grid, "
                                   f"past the memref's dim of {shape[i]}")


def _inside_if(op, top: scf.ParallelOp) -> bool:
    parent = op.parent_op()
    while parent is not None and parent is not top:
        if isinstance(parent, scf.IfOp):
            return True
        parent = parent.parent_op()
    return False


def _merged_rows(fn: func.FuncOp, where: str) -> dict[int, tuple[tuple[int, ...], ...]]:
    """Per argument, the dims a ``memref.collapse_shape`` of it merges (groups of
    two or more): the runtime checks that a tensor's strides merge them."""
    rows: dict[int, tuple[tuple[int, ...], ...]] = {}
    for op in fn.body.block.ops:
        if isinstance(op, memref.CollapseShapeOp):
            src = op.src
            if not (isinstance(src, BlockArgument) and src.owner is fn.body.block):
                raise CodegenError(f"{where}: memref.collapse_shape must collapse a kernel argument")
            groups = tuple(tuple(int(e.value.data) for e in g.data) for g in op.reassociation.data)
            rows[src.index] = rows.get(src.index, ()) + tuple(g for g in groups if len(g) > 1)
    return rows


def _check_stores(fn: func.FuncOp, outputs: frozenset[int], where: str) -> None:
    for op in fn.walk():
        if isinstance(op, memref.StoreOp | vector.TransferWriteOp):
            target = op.operands[1]
            if isinstance(target.owner, memref.CollapseShapeOp):
                target = target.owner.src
            if isinstance(target, BlockArgument) and target.owner is fn.body.block and target.index not in outputs:
                raise CodegenError(f"{where}: stores to argument #{target.index}, which '{OUTPUTS_ATTR}' does not list")


def _dtype_name(fn: func.FuncOp, index: int, t: MemRefType, where: str) -> str:
    elem = t.get_element_type()
    declared = _arg_attr(fn, index, DTYPE_ARG_ATTR)
    if declared is not None:
        if _storage_width(declared) != _storage_width(elem):
            raise CodegenError(f"{where}: argument #{index}: '{DTYPE_ARG_ATTR} = {declared}' does not fit element type {elem}")
        elem = declared
    return element_dtype_name(elem, f"{where}: argument #{index}")


def element_dtype_name(elem: Attribute, where: str = "") -> str:
    try:
        return dtypes.dtype_name(elem)
    except dtypes.UnsupportedDtype:
        raise CodegenError(f"{where}: element type {elem} has no torch dtype") from None


def _storage_width(t: Attribute) -> int | None:
    if isinstance(t, IntegerType):
        return t.width.data
    for cls, bits in ((Float32Type, 32), (Float16Type, 16), (BFloat16Type, 16), (Float64Type, 64)):
        if isinstance(t, cls):
            return bits
    return None


def _arg_attr(fn: func.FuncOp, index: int, key: str) -> Attribute | None:
    if fn.arg_attrs is None:
        return None
    return fn.arg_attrs.data[index].data.get(key)
