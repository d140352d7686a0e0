"""The physical layout of a tensor value: ``#tsr.layout<...>``.

A layout is a *dim order*: the logical dimensions listed from the outermost
(slowest varying) to the innermost (contiguous) one in memory. It never changes
the logical shape; ``tensor<1x64x32x32xf32, #tsr.layout<nhwc>>`` is a 1x64x32x32
tensor whose channels are contiguous in memory.

    #tsr.layout<nchw>            // == [0, 1, 2, 3]
    #tsr.layout<nhwc>            // == [0, 2, 3, 1]
    #tsr.layout<ndhwc>           // == [0, 2, 3, 4, 1]
    #tsr.layout<[1, 0]>          // a column-major matrix

A ranked tensor type without an encoding has the contiguous (identity) order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, NoneAttr, TensorType, i64
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tessera.dialects.dim_orders import (  # noqa: F401 - the layout arithmetic, re-exported
    _NAME_OF,
    NAMED_LAYOUTS,
    channels_last,
    identity,
    perm_from_strides,
    strides_for,
)


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """A dim order, carried as the encoding of a ranked tensor type."""

    name = "tsr.layout"

    dim_order: DenseArrayBase

    def __init__(self, dim_order: Sequence[int]):
        super().__init__(DenseArrayBase.from_list(i64, list(dim_order)))

    @property
    def perm(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.dim_order.get_values())

    @property
    def rank(self) -> int:
        return len(self.perm)

    def is_identity(self) -> bool:
        return self.perm == identity(self.rank)

    def verify(self) -> None:
        perm = self.perm
        if sorted(perm) != list(range(len(perm))):
            raise VerifyException(
                f"#tsr.layout dim order {list(perm)} is not a permutation of 0..{len(perm) - 1}"
            )

    def print_parameters(self, printer: Printer) -> None:
        name = _NAME_OF.get(self.perm)
        printer.print_string(f"<{name}>" if name else f"<[{', '.join(map(str, self.perm))}]>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            if (name := parser.parse_optional_identifier()) is not None:
                if name not in NAMED_LAYOUTS:
                    parser.raise_error(
                        f"unknown layout '{name}', expected one of {sorted(NAMED_LAYOUTS)} "
                        "or a dim order such as [0, 2, 3, 1]",
                        pos,
                        parser.pos,
                    )
                perm = list(NAMED_LAYOUTS[name])
            else:
                perm = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer
                )
            if sorted(perm) != list(range(len(perm))):
                parser.raise_error(
                    f"dim order {perm} is not a permutation of 0..{len(perm) - 1}",
                    pos,
                    parser.pos,
                )
        return [DenseArrayBase.from_list(i64, perm)]


def layout_of(t: Attribute) -> tuple[int, ...]:
    """The dim order of a tensor type (the identity when it has no encoding)."""
    if not isinstance(t, TensorType):
        return ()
    enc = t.encoding
    if isinstance(enc, LayoutAttr):
        return enc.perm
    return identity(len(t.get_shape()))


def with_layout(t: TensorType, perm: Sequence[int]) -> TensorType:
    """``t`` with its encoding replaced by the layout ``perm``."""
    return TensorType(t.get_element_type(), t.get_shape(), LayoutAttr(perm))


def has_encoding(t: Attribute) -> bool:
    return isinstance(t, TensorType) and not isinstance(t.encoding, NoneAttr)
