"""Elementwise ``tsr`` ops, with torch's broadcasting.

Operands are tensors or scalars (a scalar is a value of a builtin element
type, made by ``tsr.constant``); at least one operand is a tensor:

    %y = tsr.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %z = tsr.add %y, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %c = tsr.constant 1.000000e+00 : f64
    %w = tsr.mul %z, %c : (tensor<2x8xf32>, f64) -> tensor<2x8xf32>
    %m = tsr.cmp gt, %z, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
    %s = tsr.where %m, %z, %c : (tensor<2x8xi1>, tensor<2x8xf32>, f64) -> tensor<2x8xf32>

Result layouts are free: a kernel may write any dim order.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from . import dtypes
from .shapes import broadcast_shapes, check_values_layouts, elem_of, expect_shape, shape_of


def _check_operand(t: Attribute, what: str) -> None:
    if not isinstance(t, TensorType) and t not in dtypes.SUPPORTED:
        raise VerifyException(f"{what} must be a tensor or a scalar of a supported element type, got {t}")


def _verify_elementwise(op: IRDLOperation, result_elem: Attribute | None = None) -> None:
    check_values_layouts(list(op.operands) + list(op.results), op.name)
    for i, v in enumerate(op.operands):
        _check_operand(v.type, f"operand #{i}")
    if not any(isinstance(v.type, TensorType) for v in op.operands):
        raise VerifyException("at least one operand must be a tensor")
    res = op.results[0].type
    if not isinstance(res, TensorType):
        raise VerifyException("result must be a tensor")
    expect_shape(shape_of(res), broadcast_shapes(*(shape_of(v.type) for v in op.operands)), "result")
    if result_elem is not None and elem_of(res) != result_elem:
        raise VerifyException(f"result element type must be {result_elem}, got {elem_of(res)}")


class UnaryOp(IRDLOperation):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        _verify_elementwise(self)
        if self.name not in INT_OK_UNARY and not dtypes.is_float(elem_of(self.input.type)):
            raise VerifyException(f"{self.name} needs a floating-point operand")


class BinaryOp(IRDLOperation):
    lhs = operand_def()
    rhs = operand_def()
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        _verify_elementwise(self)


INT_OK_UNARY = {"tsr.neg", "tsr.relu", "tsr.abs"}


def _unary(op_name: str, doc: str) -> type[UnaryOp]:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (UnaryOp,), {"name": op_name, "__doc__": doc, "__module__": __name__})
    return irdl_op_definition(cls)


def _binary(op_name: str, doc: str) -> type[BinaryOp]:
    cls = type(op_name.split(".")[1].title() + "Op", (BinaryOp,), {"name": op_name, "__doc__": doc, "__module__": __name__})
    return irdl_op_definition(cls)


NegOp = _unary("tsr.neg", "-x.  `%y = tsr.neg %x : (tensor<4xf32>) -> tensor<4xf32>`")
ExpOp = _unary("tsr.exp", "e**x.  `%y = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>`")
LogOp = _unary("tsr.log", "ln x.  `%y = tsr.log %x : (tensor<4xf32>) -> tensor<4xf32>`")
SqrtOp = _unary("tsr.sqrt", "sqrt x.  `%y = tsr.sqrt %x : (tensor<4xf32>) -> tensor<4xf32>`")
RsqrtOp = _unary("tsr.rsqrt", "1/sqrt x.  `%y = tsr.rsqrt %x : (tensor<4xf32>) -> tensor<4xf32>`")
SigmoidOp = _unary("tsr.sigmoid", "1/(1+e**-x).  `%y = tsr.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>`")
SiluOp = _unary("tsr.silu", "x*sigmoid(x).  `%y = tsr.silu %x : (tensor<4xf32>) -> tensor<4xf32>`")
ReluOp = _unary("tsr.relu", "max(x, 0).  `%y = tsr.relu %x : (tensor<4xf32>) -> tensor<4xf32>`")
TanhOp = _unary("tsr.tanh", "tanh x.  `%y = tsr.tanh %x : (tensor<4xf32>) -> tensor<4xf32>`")
AbsOp = _unary("tsr.abs", "|x|.  `%y = tsr.abs %x : (tensor<4xf32>) -> tensor<4xf32>`")
ErfOp = _unary("tsr.erf", "erf x.  `%y = tsr.erf %x : (tensor<4xf32>) -> tensor<4xf32>`")
ReciprocalOp = _unary("tsr.reciprocal", "1/x.  `%y = tsr.reciprocal %x : (tensor<4xf32>) -> tensor<4xf32>`")
Log1pOp = _unary("tsr.log1p", "ln(1 + x), exact near 0.  `%y = tsr.log1p %x : (tensor<4xf32>) -> tensor<4xf32>`")
Expm1Op = _unary("tsr.expm1", "e**x - 1, exact near 0.  `%y = tsr.expm1 %x : (tensor<4xf32>) -> tensor<4xf32>`")
FloorOp = _unary("tsr.floor", "The largest integer <= x.  `%y = tsr.floor %x : (tensor<4xf32>) -> tensor<4xf32>`")
CeilOp = _unary("tsr.ceil", "The smallest integer >= x.  `%y = tsr.ceil %x : (tensor<4xf32>) -> tensor<4xf32>`")
TruncOp = _unary("tsr.trunc", "x rounded toward 0.  `%y = tsr.trunc %x : (tensor<4xf32>) -> tensor<4xf32>`")
RoundOp = _unary("tsr.round", "x rounded to the nearest integer, halves to even (``torch.round``).  "
                 "`%y = tsr.round %x : (tensor<4xf32>) -> tensor<4xf32>`")


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU, exact (erf) or with the tanh approximation.

        %y = tsr.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    """

    name = "tsr.gelu"
    approximate = opt_prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        super().verify_()
        if self.approximate is not None and self.approximate.data not in ("none", "tanh"):
            raise VerifyException("approximate must be \"none\" or \"tanh\"")


AddOp = _binary("tsr.add", "a + b.  `%z = tsr.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`")
SubOp = _binary("tsr.sub", "a - b.  `%z = tsr.sub %x, %y : (tensor<4xf32>, f64) -> tensor<4xf32>`")
MulOp = _binary("tsr.mul", "a * b.  `%z = tsr.mul %x, %y : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>`")
DivOp = _binary("tsr.div", "a / b (true division).  `%z = tsr.div %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`")
PowOp = _binary("tsr.pow", "a ** b.  `%z = tsr.pow %x, %e : (tensor<4xf32>, f64) -> tensor<4xf32>`")
MaximumOp = _binary("tsr.maximum", "max(a, b).  `%z = tsr.maximum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`")
MinimumOp = _binary("tsr.minimum", "min(a, b).  `%z = tsr.minimum %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>`")

CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(IRDLOperation):
    """Comparison, giving a boolean (``i1``) tensor.

        %m = tsr.cmp lt, %x, %y : (tensor<4xf32>, f64) -> tensor<4xi1>
    """

    name = "tsr.cmp"
    predicate = prop_def(StringAttr)
    lhs = operand_def()
    rhs = operand_def()
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, predicate: str, lhs, rhs, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties={"predicate": StringAttr(predicate)})

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            raise VerifyException(f"unknown predicate '{self.predicate.data}', expected one of {CMP_PREDICATES}")
        _verify_elementwise(self, i1)

    def print(self, printer) -> None:
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([self.lhs.type, self.rhs.type], [self.result.type])

    @classmethod
    def parse(cls, parser) -> CmpOp:
        pos = parser.pos
        pred = parser.parse_identifier()
        if pred not in CMP_PREDICATES:
            parser.raise_error(f"unknown predicate '{pred}', expected one of {CMP_PREDICATES}", pos, parser.pos)
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tpos = parser.pos
        ftype = parser.parse_function_type()
        if len(ftype.outputs.data) != 1:
            parser.raise_error("tsr.cmp has one result", tpos, parser.pos)
        lv, rv = parser.resolve_operands([lhs, rhs], ftype.inputs.data, tpos)
        op = cls(pred, lv, rv, ftype.outputs.data[0])
        op.attributes |= attrs
        return op


@irdl_op_definition
class WhereOp(IRDLOperation):
    """Select ``a`` where ``cond`` holds, else ``b`` (``aten.where.self``).

        %r = tsr.where %m, %x, %c : (tensor<4xi1>, tensor<4xf32>, f32) -> tensor<4xf32>
    """

    name = "tsr.where"
    cond = operand_def()
    a = operand_def()
    b = operand_def()
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $a `,` $b attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        _verify_elementwise(self)
        if elem_of(self.cond.type) != i1:
            raise VerifyException(f"condition must have element type i1, got {elem_of(self.cond.type)}")


UNARY_OPS = (NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, SigmoidOp, SiluOp, ReluOp, TanhOp, AbsOp, ErfOp, ReciprocalOp, GeluOp,
             Log1pOp, Expm1Op, FloorOp, CeilOp, TruncOp, RoundOp)
BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp)
ELEMENTWISE_OPS = (*UNARY_OPS, *BINARY_OPS, CmpOp, WhereOp)
