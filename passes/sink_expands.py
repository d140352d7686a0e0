"""``sink-expands``: an expand sized by host values moves below the elementwise ops
that read it, and into the broadcast of an elementwise op that reads it beside an
operand of the full size, so that no host op writes the expanded tensor.

At symbolic sizes a mean's backward is ``expand(dy, n, h, w) / (h * w)``: the
expand's sizes are values of the host, so ``fuse-kernels`` leaves it there (a
kernel cannot size it), and the host wrote the whole expanded tensor for the
kernel that reads it beside ``x``. After this pass the kernel broadcasts ``dy``
itself, as it does at static sizes:

    %e = tsr.expand %g, %n, %h, %w : (tensor<?x64x1x1xf32>, i64, i64, i64) -> tensor<?x64x?x?xf32>
    %d = tsr.div %e, %s : (tensor<?x64x?x?xf32>, tensor<f64>) -> tensor<?x64x?x?xf32>
    %y = tsr.mul %x, %d : (tensor<?x64x?x?xf32>, tensor<?x64x?x?xf32>) -> tensor<?x64x?x?xf32>
    // becomes
    %d2 = tsr.div %g, %s : (tensor<?x64x1x1xf32>, tensor<f64>) -> tensor<?x64x1x1xf32>
    %y = tsr.mul %x, %d2 : (tensor<?x64x?x?xf32>, tensor<?x64x1x1xf32>) -> tensor<?x64x?x?xf32>

Exact: an op whose other operands are scalars (or 0-d) commutes with a broadcast;
and Dynamo specializes sizes 0 and 1, so where the expand broadcasts a dim that
another operand has as a dynamic dim (at least 2) or as a number other than 1,
ATen's broadcasting made both sizes equal, and the op's result has that operand's.
An expand that keeps other users stays for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.shapes import elem_of, shape_of, with_elem


def _is_scalar(v: SSAValue) -> bool:
    return not isinstance(v.type, TensorType) or not shape_of(v.type)


def _covered(e: tsr.ExpandOp, others: list[SSAValue]) -> bool:
    """Whether every dim that ``e`` broadcasts (its input's 1, or a leading dim it adds) is a
    dim other than 1 of one of ``others`` (right-aligned, as broadcasting aligns them)."""
    src, out = shape_of(e.input.type), shape_of(e.result.type)
    lead = len(out) - len(src)
    for d, n in enumerate(out):
        if d >= lead and (src[d - lead] != 1 or n == 1):
            continue  # passes through (or stays 1)
        if not any(len(shape_of(o.type)) - len(out) + d >= 0
                   and shape_of(o.type)[len(shape_of(o.type)) - len(out) + d] != 1 for o in others):
            return False
    return True


def _sink(e: tsr.ExpandOp, worklist: list[tsr.ExpandOp]) -> None:
    """Rewrites ``e``'s elementwise users (see the module docstring); erases ``e`` if none is left."""
    for use in list(e.result.uses):
        user = use.operation
        if not isinstance(user, ELEMENTWISE_OPS):
            continue
        others = [v for i, v in enumerate(user.operands) if i != use.index]
        tensors = [v for v in others if not _is_scalar(v)]
        if tensors and _covered(e, tensors):  # the user broadcasts e's input itself
            user.operands = [e.input if i == use.index else v for i, v in enumerate(user.operands)]
        elif not tensors and layout_of(user.result.type) == layout_of(e.result.type):
            narrow = type(user).create(
                operands=[e.input if i == use.index else v for i, v in enumerate(user.operands)],
                result_types=[with_elem(e.input.type, elem_of(user.result.type))],
                properties=dict(user.properties), attributes=dict(user.attributes))
            wide = tsr.ExpandOp.create(operands=[narrow.results[0], *e.sizes], result_types=[user.result.type])
            block = user.parent_block()
            block.insert_ops_before([narrow, wide], user)
            narrow.results[0].name_hint = user.results[0].name_hint
            user.results[0].replace_all_uses_with(wide.result)
            block.erase_op(user)
            worklist.append(wide)
    if not e.result.uses:
        e.parent_block().erase_op(e)


def sink_expands(module: Operation) -> None:
    worklist = [op for op in module.walk() if isinstance(op, tsr.ExpandOp) and op.sizes]
    while worklist:
        e = worklist.pop()
        if e.parent_block() is not None:
            _sink(e, worklist)


@dataclass(frozen=True)
class SinkExpands(ModulePass):
    name = "sink-expands"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sink_expands(op)
