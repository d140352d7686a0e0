"""A reference interpreter for ``tsr`` modules: every op runs as torch calls.

Values honour their types: a ``tensor<1x8x4x4xf32, #tsr.layout<nhwc>>`` is a
torch tensor of logical shape 1x8x4x4 with channels-last strides. Passes are
tested by interpreting a module before and after them.

    outs = Interpreter(module).run(x, w)      # calls @forward
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue

from tessera.compiler.placements import in_layout
from tessera.dialects.tsr.shapes import same_dim, show

from ..errors import TesseraError
from ..ir_io import op_location
from .impls import IMPLS


class InterpreterError(TesseraError):
    """The module cannot be interpreted (an op without semantics, bad inputs)."""


def find_function(module: ModuleOp, name: str = "forward") -> func.FuncOp:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise InterpreterError(f"module has no function @{name}")


class Interpreter:
    def __init__(self, module: ModuleOp, function: str = "forward"):
        self.fn = find_function(module, function)
        self.device = torch.device("cpu")

    def run(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        args = self.fn.body.block.args
        if len(inputs) != len(args):
            raise InterpreterError(f"@{self.fn.sym_name.data} takes {len(args)} inputs, got {len(inputs)}")
        if inputs:
            self.device = inputs[0].device
        env: dict[SSAValue, Any] = {}
        for a, x in zip(args, inputs):
            if not isinstance(a.type, TensorType):  # a size (a SymInt of the graph): a Python int
                env[a] = x
                continue
            if not isinstance(x, torch.Tensor) or x.dim() != len(a.type.get_shape()) or not all(
                    same_dim(n, d) for n, d in zip(x.shape, a.type.get_shape())):
                raise InterpreterError(f"input {a.name_hint or a.index} expects shape {show(a.type.get_shape())}")
            env[a] = in_layout(x, a.type)
        for op in self.fn.body.block.ops:
            if isinstance(op, func.ReturnOp):
                return [env[v] for v in op.operands]
            impl = IMPLS.get(type(op))
            if impl is None:
                raise InterpreterError(f"no reference semantics for '{op.name}'", op_location(op))
            out = impl(op, self, *(env[v] for v in op.operands))
            outs = out if isinstance(out, tuple) else (out,)
            for r, v in zip(op.results, outs, strict=True):
                env[r] = in_layout(v, r.type) if isinstance(r.type, TensorType) else v
        raise InterpreterError(f"@{self.fn.sym_name.data} has no func.return")


def interpret(module: ModuleOp, *inputs: torch.Tensor, function: str = "forward") -> list[torch.Tensor]:
    return Interpreter(module, function).run(*inputs)
