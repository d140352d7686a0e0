"""Kernel-level ``tsr`` ops: a fused group of graph ops, and the launch of a
compiled kernel.

``tsr.fused`` holds ordinary ``tsr`` ops that will become one kernel. Its
block arguments mirror its operands (the tensors the kernel reads), and
``tsr.yield`` returns its results (the tensors the kernel writes):

    %mean, %var = tsr.fused (%x) : (tensor<1x8x1024xf32>) -> (tensor<1x8x1xf32>, tensor<1x8x1xf32>) {
    ^bb0(%a: tensor<1x8x1024xf32>):
      %m = tsr.mean %a {dims = array<i64: 2>, keepdim = true} : (tensor<1x8x1024xf32>) -> tensor<1x8x1xf32>
      %v = tsr.var %a {dims = array<i64: 2>, keepdim = true, correction = 0.0 : f64}
             : (tensor<1x8x1024xf32>) -> tensor<1x8x1xf32>
      tsr.yield %m, %v : tensor<1x8x1xf32>, tensor<1x8x1xf32>
    }

The region is isolated from above: every tensor it reads is an operand, and
scalar constants are defined inside it. ``tsr.launch`` is what a fused op
becomes once its body is a kernel function (stage ``kernel``):

    %y = tsr.launch @fused_0(%x, %b) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import FlatSymbolRefAttrConstr, StringAttr, SymbolRefAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from .shapes import check_values_layouts

# Ops that are never part of a fused body: library calls and kernel-level ops.
_NOT_FUSIBLE = ("tsr.conv", "tsr.matmul", "tsr.bmm", "tsr.addmm", "tsr.int_mm", "tsr.scaled_int_mm",
                "tsr.aten_call", "tsr.fused", "tsr.launch")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The terminator of a ``tsr.fused`` body: the values the group returns.

        tsr.yield %a, %b : tensor<4xf32>, tensor<4xi1>
    """

    name = "tsr.yield"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusedOp), Pure()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class FusedOp(IRDLOperation):
    """A group of ``tsr`` ops that runs as one kernel (see the module docstring).

        %y = tsr.fused (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
        ^bb0(%a: tensor<4x8xf32>):
          %s = tsr.silu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
          tsr.yield %s : tensor<4x8xf32>
        }
    """

    name = "tsr.fused"
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], regions=[body])

    @staticmethod
    def empty_body(input_types: Sequence[Attribute]) -> tuple[Region, Block]:
        """A body region whose one block has an argument of each input type."""
        block = Block(arg_types=list(input_types))
        return Region(block), block

    @property
    def yield_op(self) -> YieldOp:
        last = self.body.block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("the body of tsr.fused must end with tsr.yield")
        return last

    def verify_(self) -> None:
        check_values_layouts(list(self.inputs) + list(self.outs), self.name)
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(f"body has {len(block.args)} arguments for {len(self.inputs)} operands")
        for i, (arg, v) in enumerate(zip(block.args, self.inputs)):
            if arg.type != v.type:
                raise VerifyException(f"body argument #{i} has type {arg.type}, operand #{i} has {v.type}")
        if not self.outs:
            raise VerifyException("tsr.fused needs at least one result")
        yielded = self.yield_op.values
        if [v.type for v in yielded] != [r.type for r in self.outs]:
            raise VerifyException(
                f"yielded types ({', '.join(map(str, (v.type for v in yielded)))}) do not match "
                f"the result types ({', '.join(map(str, (r.type for r in self.outs)))})"
            )
        for op in block.ops:
            if op.name in _NOT_FUSIBLE:
                raise VerifyException(f"'{op.name}' cannot be part of a fused body")
            if op.dialect_name() != "tsr":
                raise VerifyException(f"a fused body holds tsr ops only, got '{op.name}'")

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outs])
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True, print_block_terminators=True)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        unresolved = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        inputs = parser.resolve_operands(unresolved, ftype.inputs.data, pos)
        body = parser.parse_region()
        op = cls(inputs, ftype.outputs.data, body)
        op.attributes |= attrs
        return op


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """A launch of the compiled kernel ``callee`` (a function of the kernels
    module, stage ``kernel``) on ``inputs``, giving ``outs``.

        %y = tsr.launch @fused_0(%x, %b) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
    """

    name = "tsr.launch"
    callee = prop_def(FlatSymbolRefAttrConstr)
    inputs = var_operand_def(TensorType)
    outs = var_result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$callee `(` $inputs `)` attr-dict `:` functional-type($inputs, $outs)"

    def __init__(self, callee: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"callee": SymbolRefAttr(StringAttr(callee))},
        )

    def verify_(self) -> None:
        check_values_layouts(list(self.inputs) + list(self.outs), self.name)
        if not self.outs:
            raise VerifyException("tsr.launch needs at least one result")


FUSED_OPS = (FusedOp, YieldOp, LaunchOp)
