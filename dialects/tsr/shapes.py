"""Shape and type helpers shared by the ``tsr`` op verifiers."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException

from .layout import LayoutAttr


def shape_of(t: Attribute) -> tuple[int, ...]:
    """Logical shape of a tensor type; ``()`` for a scalar."""
    return t.get_shape() if isinstance(t, TensorType) else ()


def elem_of(t: Attribute) -> Attribute:
    """Element type of a tensor type; the type itself for a scalar."""
    return t.get_element_type() if isinstance(t, TensorType) else t


I64Array = DenseArrayBase.constr(i64)
"""The constraint of an ``array<i64: ...>`` property (strides, padding, dims, ...)."""


def ints(arr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in arr.get_values())


def i64_array(values) -> DenseArrayBase:
    """``array<i64: ...>`` of ``values`` (the inverse of :func:`ints`)."""
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy/torch broadcasting; raises ``VerifyException`` when incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d == out[i] or d == 1:
                continue
            if out[i] == 1:
                out[i] = d
                continue
            raise VerifyException(
                f"shapes {[list(x) for x in shapes]} are not broadcast-compatible"
            )
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
    if any(d < 0 for d in t.get_shape()):
        raise VerifyException(f"{what}: dynamic or negative dims are not supported")


def check_values_layouts(values: Sequence[SSAValue], what: str) -> None:
    for i, v in enumerate(values):
        check_tensor_layout(v.type, f"{what} #{i}")


def expect_shape(actual: Sequence[int], expected: Sequence[int], what: str) -> None:
    if tuple(actual) != tuple(expected):
        raise VerifyException(f"{what} has shape {list(actual)}, expected {list(expected)}")


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
