"""``assign-layouts{target=x86}``: picks each convolution's layout from the target's
cost model (the target's table in ``target_models``) and makes the IR say so.

A conv that should run channels-last gets its input and weight relayouted to
``nhwc``/``ndhwc``, computes in that layout, and hands its users the layout
they had, through a relayout back:

    %y = tsr.conv %x, %w, %b {...} : (tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>, tensor<8x8x3x3x3xf32, #tsr.layout<ncdhw>>, tensor<8xf32>)
                                    -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>
    // becomes
    %xr = tsr.relayout %x : (tensor<1x8x6x18x18xf32, #tsr.layout<ncdhw>>) -> tensor<1x8x6x18x18xf32, #tsr.layout<ndhwc>>
    %wr = tsr.relayout %w : (tensor<8x8x3x3x3xf32, #tsr.layout<ncdhw>>) -> tensor<8x8x3x3x3xf32, #tsr.layout<ndhwc>>
    %c  = tsr.conv %xr, %wr, %b {...} : (...) -> tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>
    %y  = tsr.relayout %c : (tensor<1x8x4x16x16xf32, #tsr.layout<ndhwc>>) -> tensor<1x8x4x16x16xf32, #tsr.layout<ncdhw>>

A conv the model keeps contiguous is made contiguous the same way, so every
conv's operands and result agree on one layout, the one the library gets.
The relayouts are then ``hoist-relayouts``', ``cancel-relayouts``' and
``fuse-relayouts``' work. Graph inputs and outputs keep the strides eager
gives them; with ``boundary=free`` a conv result that the graph returns is
returned in the conv's layout instead (the function's type changes).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity, layout_of, with_layout
from tessera.dialects.tsr.shapes import shape_of

from .target_models import ConvShape, prefers_channels_last, target_models

BOUNDARIES = ("eager", "free")


def _relayouted(v: SSAValue, perm: tuple[int, ...], before: tsr.ConvOp) -> SSAValue:
    if layout_of(v.type) == perm:
        return v
    r = tsr.RelayoutOp.create(operands=[v], result_types=[with_layout(v.type, perm)])
    Rewriter.insert_op(r, InsertPoint.before(before))
    return r.results[0]


@dataclass(frozen=True)
class AssignLayouts(ModulePass):
    name = "assign-layouts"

    target: str
    boundary: str = "eager"

    def __post_init__(self) -> None:
        target_models(self.target)  # a ValueError naming the known targets
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"boundary must be one of {', '.join(BOUNDARIES)}, got '{self.boundary}'")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if isinstance(o, tsr.ConvOp)]:
            rank = len(shape_of(conv.input.type))
            perm = channels_last(rank) if prefers_channels_last(self.target, ConvShape.of(conv)) else identity(rank)
            self._assign(conv, perm)

    def _assign(self, conv: tsr.ConvOp, perm: tuple[int, ...]) -> None:
        conv.operands[0] = _relayouted(conv.input, perm, conv)
        conv.operands[1] = _relayouted(conv.weight, perm, conv)
        if conv.residual_input is not None:  # the residual has the result's type
            conv.operands[len(conv.operands) - 1] = _relayouted(conv.residual_input, perm, conv)
        old: TensorType = conv.result.type
        if layout_of(old) == perm:
            return
        name = conv.result.name_hint
        result = Rewriter.replace_value_with_new_type(conv.result, with_layout(old, perm))
        back = tsr.RelayoutOp.create(operands=[result], result_types=[old])
        back.results[0].name_hint = name
        Rewriter.insert_op(back, InsertPoint.after(conv))
        for u in list(result.uses):
            if u.operation is back:
                continue
            if self.boundary == "free" and isinstance(u.operation, func.ReturnOp):
                _retype_result(u.operation, u.index, result.type)
            else:
                u.operation.operands[u.index] = back.results[0]
        if not back.results[0].uses:
            Rewriter.erase_op(back)


def _retype_result(ret: func.ReturnOp, index: int, new: TensorType) -> None:
    fn = ret.parent_op()
    if not isinstance(fn, func.FuncOp):
        return
    outs = list(fn.function_type.outputs.data)
    outs[index] = new
    fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), outs)
