"""Core ``tsr`` ops: constants, dtype conversion, layout change, ATen fallback calls."""

from __future__ import annotations

import re

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    NoneType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    base,
    eq,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from . import dtypes
from .shapes import check_tensor_layout, check_values_layouts, elem_of, expect_shape, shape_of


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A typed constant: a scalar or a dense tensor.

        %c0 = tsr.constant 0.000000e+00 : bf16
        %c1 = tsr.constant 1 : i64
        %w  = tsr.constant dense<1.0> : tensor<4x3xf32, #tsr.layout<[1, 0]>>

    A scalar of type ``f64`` or ``i64`` is a Python number as written in the
    model: ``cast-constants`` gives it the dtype of the value it meets.
    """

    name = "tsr.constant"
    value = prop_def(FloatAttr | IntegerAttr | DenseIntOrFPElementsAttr)
    result = result_def()
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: Attribute):
        rtype = value.get_type() if isinstance(value, DenseIntOrFPElementsAttr) else value.type
        super().__init__(properties={"value": value}, result_types=[rtype])

    def verify_(self) -> None:
        v = self.value
        vt = v.get_type() if isinstance(v, DenseIntOrFPElementsAttr) else v.type
        if vt != self.result.type:
            raise VerifyException(f"value of type {vt} does not match result type {self.result.type}")
        if elem_of(vt) not in dtypes.SUPPORTED:
            raise VerifyException(f"unsupported constant element type {elem_of(vt)}")
        check_tensor_layout(vt, "result")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, (FloatAttr, IntegerAttr, DenseIntOrFPElementsAttr)):
            parser.raise_error("expected a typed scalar or a dense<...> tensor constant", pos, parser.pos)
        op = cls(value)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """Element type conversion (``aten._to_copy``/``prims.convert_element_type``).

        %1 = tsr.convert %0 : (tensor<1x8xf32>) -> tensor<1x8xbf16>
    """

    name = "tsr.convert"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "convert")
        expect_shape(shape_of(self.result.type), shape_of(self.input.type), "result")


@irdl_op_definition
class RelayoutOp(IRDLOperation):
    """The same logical tensor stored in another layout.

        %1 = tsr.relayout %0 : (tensor<1x64x8x8xf32, #tsr.layout<nchw>>)
                             -> tensor<1x64x8x8xf32, #tsr.layout<nhwc>>

    Unlike ``tsr.permute``, the logical shape and every element's logical
    index stay the same; only the physical order changes.
    """

    name = "tsr.relayout"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "relayout")
        expect_shape(shape_of(self.result.type), shape_of(self.input.type), "result")
        if elem_of(self.input.type) != elem_of(self.result.type):
            raise VerifyException("relayout cannot change the element type; use tsr.convert")


@irdl_attr_definition
class OperandRefAttr(ParametrizedAttribute):
    """In ``tsr.aten_call`` arguments: the N-th operand of the call. ``#tsr.operand<0>``"""

    name = "tsr.operand"
    index: IntAttr

    def __init__(self, index: int):
        super().__init__(IntAttr(index))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.index.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [IntAttr(parser.parse_integer(allow_negative=False))]


@irdl_attr_definition
class TorchEnumAttr(ParametrizedAttribute):
    """In ``tsr.aten_call`` arguments: a torch enum value such as
    ``#tsr.torch<"channels_last">`` (memory formats, layouts, devices)."""

    name = "tsr.torch"
    value: StringAttr

    def __init__(self, value: str):
        super().__init__(StringAttr(value))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.value.data)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [StringAttr(parser.parse_str_literal())]


_OPERATOR_NAME = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*\.[A-Za-z_]\w*")
"""``aten.add.Tensor``, ``prims.iota.default``, ``torch_nn.op.default``: a torch operator's name."""


@irdl_op_definition
class AtenCallOp(IRDLOperation):
    """A call of an ATen op that tessera does not compile; it still runs.

        %r = tsr.aten_call "aten.convolution_backward.default"(%g, %x, %w)
               {args = [#tsr.operand<0>, #tsr.operand<1>, #tsr.operand<2>, [16], ...]}
               : (tensor<...>, tensor<...>, tensor<...>) -> (tensor<...>, tensor<...>, none)

    ``args``/``kwargs`` hold the schema arguments: ``#tsr.operand<i>`` for the
    i-th operand (a tensor, or an ``i64`` size known at run time: a symbolic
    ``size`` argument of ``aten.full``), ``unit`` for None, numbers, strings, element types
    for dtypes, arrays for lists and ``#tsr.torch<"...">`` for torch enums.
    A ``none``-typed result is an output the op returns as None.
    """

    name = "tsr.aten_call"
    callee = prop_def(StringAttr)
    args = prop_def(ArrayAttr)
    kwargs = opt_prop_def(DictionaryAttr)
    inputs = var_operand_def(base(TensorType) | eq(i64))
    outs = var_result_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outs)"

    def verify_(self) -> None:
        check_values_layouts(list(self.inputs) + list(self.outs), "aten_call")
        if not _OPERATOR_NAME.fullmatch(self.callee.data):
            raise VerifyException(f"callee '{self.callee.data}' is not a torch operator (NAMESPACE.NAME.OVERLOAD)")
        for r in self.outs:
            if not isinstance(r.type, (TensorType, NoneType)):
                raise VerifyException(f"result of type {r.type} is neither a tensor nor none")

        def check(a: Attribute) -> None:
            if isinstance(a, OperandRefAttr) and not 0 <= a.index.data < len(self.inputs):
                raise VerifyException(f"#tsr.operand<{a.index.data}> out of range")
            if isinstance(a, ArrayAttr):
                for x in a.data:
                    check(x)

        check(self.args)
        if self.kwargs is not None:
            for v in self.kwargs.data.values():
                check(v)
