"""``dce``: removes pure ops whose results are unused.

    %a = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>     // erased: %a has no use
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import DeadCodeElimination


@dataclass(frozen=True)
class Dce(ModulePass):
    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        DeadCodeElimination().apply(ctx, op)
