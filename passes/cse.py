"""``cse``: common subexpression elimination over pure ops.

    %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>     // replaced by %a
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination


@dataclass(frozen=True)
class Cse(ModulePass):
    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        CommonSubexpressionElimination().apply(ctx, op)
