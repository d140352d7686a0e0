"""Shape and type helpers shared by the ``tsr`` op verifiers.

A dim may be dynamic: ``?`` in ``tensor<?x64x?x?xf32>`` (MLIR's spelling),
:data:`DYNAMIC` in a shape tuple. The verifiers check what is known and leave
the rest to run time: a dynamic dim matches any size, arithmetic on one gives
one (:func:`dim_of`), broadcasting a dynamic dim against a size ``n > 1`` gives
``n`` (the only size that can broadcast with it).

    expect_shape([DYNAMIC, 64], [8, 64], "result")        # passes: 8 may be the size at run time
    broadcast_shapes((DYNAMIC, 8), (1, 8))                # (DYNAMIC, 8)
    dim_of(lambda n: n + 2, DYNAMIC)                      # DYNAMIC
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException

from .layout import LayoutAttr

DYNAMIC = DYNAMIC_INDEX
"""A dim known only at run time (``?``; xDSL's ``DYNAMIC_INDEX``, MLIR's ``kDynamic``)."""


def is_static(shape: Sequence[int]) -> bool:
    return all(d != DYNAMIC for d in shape)


def same_dim(a: int, b: int) -> bool:
    """Two dims that can be the same size at run time."""
    return a == b or a == DYNAMIC or b == DYNAMIC


def dim_of(fn: Callable[..., int], *dims: int) -> int:
    """``fn(*dims)``, or :data:`DYNAMIC` where one of ``dims`` is."""
    return DYNAMIC if DYNAMIC in dims else fn(*dims)


def show_dim(d: int) -> str:
    return "?" if d == DYNAMIC else str(d)


def show(shape: Sequence[int]) -> str:
    """A shape as the verifiers print it: ``[?, 64, 8]``."""
    return "[" + ", ".join(show_dim(d) for d in shape) + "]"


def shape_of(t: Attribute) -> tuple[int, ...]:
    """Logical shape of a tensor type; ``()`` for a scalar."""
    return t.get_shape() if isinstance(t, TensorType) else ()


def elem_of(t: Attribute) -> Attribute:
    """Element type of a tensor type; the type itself for a scalar."""
    return t.get_element_type() if isinstance(t, TensorType) else t


def with_elem(t: Attribute, elem: Attribute) -> Attribute:
    """``t`` with element type ``elem``, its shape and layout kept; a scalar type is ``elem``:
    ``tensor<2x3xbf16, #tsr.layout<[1, 0]>>`` -> ``tensor<2x3xf32, #tsr.layout<[1, 0]>>``."""
    return TensorType(elem, t.get_shape(), t.encoding) if isinstance(t, TensorType) else elem


def with_shape(t: TensorType, shape: Sequence[int]) -> TensorType:
    """``t`` with ``shape`` (the same rank), its element type and layout kept:
    ``tensor<8x8x3x3xf32, #tsr.layout<nhwc>>`` -> ``tensor<8x8x1x3xf32, #tsr.layout<nhwc>>``."""
    return TensorType(t.get_element_type(), list(shape), t.encoding)


I64Array = DenseArrayBase.constr(i64)
"""The constraint of an ``array<i64: ...>`` property (strides, padding, dims, ...)."""


def ints(arr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in arr.get_values())


def i64_array(values) -> DenseArrayBase:
    """``array<i64: ...>`` of ``values`` (the inverse of :func:`ints`)."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def numel(shape: Sequence[int]) -> int:
    """The number of elements of a static shape (the product of the known dims of any)."""
    n = 1
    for s in shape:
        n *= s if s != DYNAMIC else 1
    return n


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/torch broadcasting; raises ``VerifyException`` when the known sizes
    are incompatible. A dynamic dim against ``n > 1`` gives ``n``; against 1 or
    another dynamic dim, a dynamic dim."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1 or out[i] == DYNAMIC:
                out[i] = d
                continue
            if d == DYNAMIC:
                continue
            raise VerifyException(f"shapes [{', '.join(show(x) for x in shapes)}] are not broadcast-compatible")
    return tuple(out)


def check_tensor_layout(t: Attribute, what: str) -> None:
    """A tensor type's layout encoding, if any, has the tensor's rank."""
    if not isinstance(t, TensorType):
        return
    enc = t.encoding
    if isinstance(enc, LayoutAttr) and enc.rank != len(t.get_shape()):
        raise VerifyException(
            f"{what}: layout of rank {enc.rank} on a rank-{len(t.get_shape())} tensor"
        )
    if any(d < 0 and d != DYNAMIC for d in t.get_shape()):
        raise VerifyException(f"{what}: negative dims")


def check_values_layouts(values: Sequence[SSAValue], what: str) -> None:
    for i, v in enumerate(values):
        check_tensor_layout(v.type, f"{what} #{i}")


def expect_shape(actual: Sequence[int], expected: Sequence[int], what: str) -> None:
    """``actual`` can be ``expected`` at run time (a dynamic dim matches any size)."""
    if len(actual) != len(expected) or not all(same_dim(a, e) for a, e in zip(actual, expected)):
        raise VerifyException(f"{what} has shape {show(actual)}, expected {show(expected)}")


def expect_same_elem(a: Attribute, b: Attribute, what: str) -> None:
    if elem_of(a) != elem_of(b):
        raise VerifyException(f"{what}: element types {elem_of(a)} and {elem_of(b)} differ")


def expect_rank(t: Attribute, ranks: Sequence[int], what: str) -> None:
    if len(shape_of(t)) not in ranks:
        raise VerifyException(
            f"{what} must have rank {' or '.join(map(str, ranks))}, got {len(shape_of(t))}"
        )


def normalize_dims(dims: Sequence[int], rank: int, what: str) -> tuple[int, ...]:
    out = []
    for d in dims:
        if not -max(rank, 1) <= d < max(rank, 1):
            raise VerifyException(f"{what}: dim {d} out of range for rank {rank}")
        out.append(d % max(rank, 1))
    if len(set(out)) != len(out):
        raise VerifyException(f"{what}: repeated dims {list(dims)}")
    return tuple(out)
