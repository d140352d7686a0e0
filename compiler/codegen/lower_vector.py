"""The ``vector`` ops of the kernel IR (1-D vectors: the lowering's transpose
tiles) as LLVM vector instructions.

    %r = vector.transfer_read %x[%n, %c, %h, %w], %pad
           {permutation_map = affine_map<(d0, d1, d2, d3) -> (d1)>, in_bounds = [true]}
           : memref<1x64x56x56xf32, strided<[200704, 1, 3584, 64]>>, vector<8xf32>
 ->
    %r = load <8 x float>, ptr %p, align 4        ; d1 has stride 1 (else 8 loads and inserts)

    %s = vector.shuffle %a, %b [0, 8, 1, 9, 2, 10, 3, 11] : vector<8xf32>, vector<8xf32>
 ->
    %s = shufflevector <8 x float> %a, <8 x float> %b, <8 x i32> <i32 0, i32 8, ...>

    vector.store %v, %t[%i, %c0] : memref<8x8xf32>, vector<8xf32>   ->   store <8 x float> %v, ptr %p, align 4
    vector.transfer_write %v, %y[%n, %c, %h, %w] {permutation_map = ..., in_bounds = [true]}
                                                   ->   the same store where the dim has stride 1

    %z = vector.broadcast %x : f32 to vector<16xf32>   ->   insertelement, then a zero-mask shufflevector
    %e = vector.extract %s[3] : f32 from vector<16xf32>  ->   %e = extractelement <16 x float> %s, i32 3
    %v = vector.insert %x, %s[3] : f32 into vector<16xf32>  ->   %v = insertelement <16 x float> %s, float %x, i32 3

Arithmetic on vectors (``arith.addf`` of ``vector<16xf32>``: a reduction's
accumulators) is the scalar lowering's, on LLVM vector values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import AffineMapAttr, VectorType
from xdsl.ir import Operation
from xdsl.ir.affine import AffineDimExpr

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.kernel_form import static_strides
from tessera.compiler.codegen.lower_arith import Lowering
from tessera.compiler.codegen.lower_memref import element_address
from tessera.compiler.codegen.types import I1, I32, I64, byte_size, llvm_type
from tessera.compiler.ir_io import op_location

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter


def vector_type(t: VectorType) -> ir.VectorType:
    shape = t.get_shape()
    if len(shape) != 1:
        raise CodegenError(f"only 1-D vectors are supported in kernel IR, got {t}")
    return ir.VectorType(llvm_type(t.element_type), shape[0])


def _check_element(em: KernelEmitter, vec: ir.VectorType, op: Operation) -> None:
    if vec.element == I1:
        raise CodegenError(f"kernel @{em.name}: vectors of i1 (stored as bytes) are not supported", op_location(op))


def _transfer_dim(em: KernelEmitter, op: Operation, what: str) -> int:
    """The memref dim a 1-D transfer runs along (in bounds, unmasked: the only form supported)."""
    pmap = op.permutation_map
    results = pmap.data.results if isinstance(pmap, AffineMapAttr) else ()
    in_bounds = op.properties.get("in_bounds")
    if (op.mask is not None or len(results) != 1 or not isinstance(results[0], AffineDimExpr)
            or in_bounds is None or not all(x.value for x in in_bounds.data)):
        raise CodegenError(f"kernel @{em.name}: {what} is supported in bounds along one memref dim, "
                           f"without a mask", op_location(op))
    return results[0].position


def _lane_pointers(em: KernelEmitter, ref: ir.Value, t, indices: list[ir.Value], dim: int,
                   vec: ir.VectorType) -> tuple[ir.Value, list[ir.Value] | None, ir.Type]:
    """The vector's pointer where ``dim`` has stride 1, else one pointer per lane."""
    stride = em.strides_of(ref, t)[dim]  # a number, or a value read at run time
    ptr, storage = element_address(em, ref, t, indices)
    b = em.b
    if stride == 1:
        return b.bitcast(ptr, vec.as_pointer()), None, storage
    steps = [ir.Constant(I64, k * stride) if isinstance(stride, int) else b.mul(stride, ir.Constant(I64, k))
             for k in range(vec.count)]
    return ptr, [b.gep(ptr, [step], inbounds=True, source_etype=storage) for step in steps], storage


def _transfer_read(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    vec = vector_type(op.result.type)
    _check_element(em, vec, op)
    dim = _transfer_dim(em, op, "vector.transfer_read")
    ptr, lanes, storage = _lane_pointers(em, a[0], op.source.type, a[1:-1], dim, vec)
    b = em.b
    if lanes is None:
        return [b.load(ptr, typ=vec, align=byte_size(storage))]
    out: ir.Value = ir.Constant(vec, ir.Undefined)
    for k, p in enumerate(lanes):  # a strided read: one element at a time
        out = b.insert_element(out, b.load(p, typ=storage, align=byte_size(storage)), ir.Constant(I32, k))
    return [out]


def _transfer_write(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    vec = vector_type(op.vector.type)
    _check_element(em, vec, op)
    dim = _transfer_dim(em, op, "vector.transfer_write")
    ptr, lanes, storage = _lane_pointers(em, a[1], op.source.type, a[2:], dim, vec)
    b = em.b
    if lanes is None:
        b.store(a[0], ptr, align=byte_size(storage))
    for k, p in enumerate(lanes or []):  # a strided write: one element at a time
        b.store(b.extract_element(a[0], ir.Constant(I32, k)), p, align=byte_size(storage))
    return []


def _shuffle(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    mask = [int(m) for m in op.mask.get_values()]
    const = ir.Constant(ir.VectorType(I32, len(mask)), [ir.Constant(I32, m) for m in mask])
    return [em.b.shuffle_vector(a[0], a[1], const)]


def _store(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    t = op.base.type
    vec = vector_type(op.vector.type)
    _check_element(em, vec, op)
    if static_strides(t)[-1] != 1:
        raise CodegenError(f"kernel @{em.name}: vector.store needs a memref contiguous in its last dim, got {t}",
                           op_location(op))
    ptr, storage = element_address(em, a[1], t, a[2:])
    em.b.store(a[0], em.b.bitcast(ptr, vec.as_pointer()), align=byte_size(storage))
    return []


def _broadcast(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    vec = vector_type(op.vector.type)
    if isinstance(a[0].type, ir.VectorType):
        raise CodegenError(f"kernel @{em.name}: vector.broadcast of a vector is not supported", op_location(op))
    one = em.b.insert_element(ir.Constant(vec, ir.Undefined), a[0], ir.Constant(I32, 0))
    zeros = ir.Constant(ir.VectorType(I32, vec.count), [ir.Constant(I32, 0)] * vec.count)
    return [em.b.shuffle_vector(one, ir.Constant(vec, ir.Undefined), zeros)]


def _extract(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    position = op.static_position.get_values()
    if len(position) != 1 or op.dynamic_position:
        raise CodegenError(f"kernel @{em.name}: vector.extract of one static position is supported", op_location(op))
    return [em.b.extract_element(a[0], ir.Constant(I32, position[0]))]


def _insert(em: KernelEmitter, op: Operation, a: list[ir.Value]) -> list[ir.Value]:
    position = op.static_position.get_values()
    if len(position) != 1 or op.dynamic_position:
        raise CodegenError(f"kernel @{em.name}: vector.insert at one static position is supported", op_location(op))
    return [em.b.insert_element(a[1], a[0], ir.Constant(I32, position[0]))]


LOWERINGS: dict[str, Lowering] = {
    "vector.transfer_read": _transfer_read,
    "vector.transfer_write": _transfer_write,
    "vector.shuffle": _shuffle,
    "vector.store": _store,
    "vector.broadcast": _broadcast,
    "vector.extract": _extract,
    "vector.insert": _insert,
}
