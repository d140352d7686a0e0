"""``memref`` ops as address arithmetic on a base pointer.

    %v = memref.load %x[%n, %c, %h, %w] : memref<2x8x4x4xf32, strided<[128, 1, 32, 8]>>
 ->
    %o = add nsw (mul nsw %n, 128), %c, (mul nsw %h, 32), (mul nsw %w, 8)
    %p = getelementptr inbounds float, ptr %x, i64 %o
    %v = load float, ptr %p, align 4

A dynamic stride (``strided<[?, 1]>``) is the kernel's run-time value of it
(``KernelEmitter.strides_of``), and ``memref.dim`` of a dynamic size reads it likewise.
``memref.collapse_shape`` of an argument is the same address with merged sizes
(their product) and strides (the innermost one's): ``KernelEmitter.merged_view``.

``i1`` elements are bytes (torch's bool): loaded as ``i8 != 0`` and stored zero-extended.
``memref.alloca`` becomes an ``alloca`` in the function's entry block (allocated once per call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.kernel_form import constant_index, static_strides
from tessera.compiler.codegen.lower_arith import Lowering
from tessera.compiler.codegen.types import I1, I8, I64, byte_size, llvm_type
from tessera.compiler.ir_io import op_location

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter


def element_address(em: KernelEmitter, base: ir.Value, t: MemRefType, indices: list[ir.Value]) -> tuple[ir.Value, ir.Type]:
    b = em.b
    elem = llvm_type(t.get_element_type())
    storage = I8 if elem == I1 else elem
    offset: ir.Value | None = None
    for idx, stride in zip(indices, em.strides_of(base, t), strict=True):
        if stride == 0:
            continue
        if isinstance(stride, int):
            term = idx if stride == 1 else b.mul(idx, ir.Constant(I64, stride), flags=["nsw"])
        else:
            term = b.mul(idx, stride, flags=["nsw"])
        offset = term if offset is None else b.add(offset, term, flags=["nsw"])
    if offset is None:
        return base, storage
    return b.gep(base, [offset], inbounds=True, source_etype=storage), storage


def _load(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    ptr, storage = element_address(em, a[0], op.memref.type, a[1:])
    v = em.b.load(ptr, typ=storage, align=byte_size(storage))
    if llvm_type(op.memref.type.get_element_type()) == I1:
        v = em.b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    return [v]


def _store(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    value, base, indices = a[0], a[1], a[2:]
    ptr, storage = element_address(em, base, op.memref.type, indices)
    if value.type == I1:
        value = em.b.zext(value, I8)
    em.b.store(value, ptr, align=byte_size(storage))
    return []


def _alloca(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    t = op.results[0].type
    if a or not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
        raise CodegenError(f"kernel @{em.name}: memref.alloca needs a static shape, got {t}")
    shape = t.get_shape()
    extent = 0 if 0 in shape else 1 + sum((d - 1) * s for d, s in zip(shape, static_strides(t)))
    elem = llvm_type(t.get_element_type())
    storage = I8 if elem == I1 else elem
    return [em.entry_alloca(storage, max(extent, 1))]


def _dim(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    d = constant_index(op.index)
    if d is None:
        raise CodegenError(f"kernel @{em.name}: memref.dim needs a constant dim", op_location(op))
    return [em.size_of(a[0], op.source.type, d)]


def _collapse_shape(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    groups = [[int(e.value.data) for e in g.data] for g in op.reassociation.data]
    return [em.merged_view(a[0], op.src.type, groups)]


LOWERINGS: dict[str, Lowering] = {
    "memref.collapse_shape": _collapse_shape,
    "memref.dim": _dim,
    "memref.load": _load,
    "memref.store": _store,
    "memref.alloca": _alloca,
}
