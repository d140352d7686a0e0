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
ATen's conv backward (``tsr.aten_call "aten.convolution_backward.default"``,
what the library computes of a training backward) gets its gradient and input
in the layout of the target's backward table the same way, and ATen's max pools
with indices (and their backward) channels-last where the target says so.
The relayouts are then ``hoist-relayouts``', ``cancel-relayouts``' and
``fuse-relayouts``' work. Graph inputs and outputs keep the strides eager
gives them; a result marked ``{tsr.free_layout}`` (a training forward's saved
activation) is then returned where it costs least by ``free-result-layouts``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import channels_last, identity, layout_of, with_layout
from tessera.dialects.tsr.shapes import elem_of, is_static, numel, shape_of

from .target_models import ConvShape, backward_prefers_channels_last, prefers_channels_last, target_models

LIBRARY_CONV_BACKWARD = "aten.convolution_backward.default"
"""ATen's conv backward, which tessera's gradient ops leave to the library for some convs."""

LIBRARY_POOLS = frozenset({
    "aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default",
    "aten.max_pool2d_with_indices_backward.default", "aten.max_pool3d_with_indices_backward.default",
})
"""Max pools that give their indices, and their backward, where they stay ATen's calls (a pool
of symbolic sizes, ``fx_import/pooling.py``): on a CPU 15x faster channels-last (8x64x32x32,
3x3 stride 2: 0.30 against 4.6 ms, 1 thread), and the backward 6x slower on a mix of layouts.
The indices (a point's offset in its plane) are the same in either layout."""


def _backward_shape(call: tsr.AtenCallOp) -> ConvShape | None:
    """The class of the forward conv whose backward ``call`` is (``points``: its output's), or None."""
    types = [v.type for v in call.operands[:3]]
    if len(types) < 3 or not all(isinstance(t, TensorType) for t in types):
        return None
    dy, x, w = (shape_of(t) for t in types)
    if not (len(dy) == len(x) == len(w) >= 3) or not is_static(x) or not is_static(dy) or w[1] == 0:
        return None
    return ConvShape(spatial=len(x) - 2, dtype=str(elem_of(types[1])), in_channels=x[1], out_channels=w[0],
                     groups=x[1] // w[1], kernel=tuple(w[2:]), stride=(), points=numel(dy[2:]))


def _relayouted(v: SSAValue, perm: tuple[int, ...], before: Operation) -> SSAValue:
    if layout_of(v.type) == perm:
        return v
    r = tsr.RelayoutOp.create(operands=[v], result_types=[with_layout(v.type, perm)])
    Rewriter.insert_op(r, InsertPoint.before(before))
    return r.results[0]


@dataclass(frozen=True)
class AssignLayouts(ModulePass):
    name = "assign-layouts"

    target: str

    def __post_init__(self) -> None:
        target_models(self.target)  # a ValueError naming the known targets

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for conv in [o for o in op.walk() if isinstance(o, tsr.ConvOp)]:
            rank = len(shape_of(conv.input.type))
            perm = channels_last(rank) if prefers_channels_last(self.target, ConvShape.of(conv)) else identity(rank)
            self._assign(conv, perm)
        for call in [o for o in op.walk() if isinstance(o, tsr.AtenCallOp) and o.callee.data == LIBRARY_CONV_BACKWARD]:
            self._assign_backward(call)
        if target_models(self.target).library_pools_channels_last:
            for call in [o for o in op.walk() if isinstance(o, tsr.AtenCallOp) and o.callee.data in LIBRARY_POOLS]:
                self._assign_pool(call)

    def _assign_pool(self, call: tsr.AtenCallOp) -> None:
        """A library pool's tensors of the image's rank (input, gradient, indices; values,
        indices, input gradient) channels-last."""
        rank = len(shape_of(call.operands[0].type))
        if rank not in (4, 5):
            return
        perm = channels_last(rank)
        for i, v in enumerate(call.operands):
            if isinstance(v.type, TensorType) and len(shape_of(v.type)) == rank:
                call.operands[i] = _relayouted(v, perm, call)
        for r in call.results:
            if isinstance(r.type, TensorType) and len(shape_of(r.type)) == rank:
                self._result_in(call, r, perm)

    def _assign_backward(self, call: tsr.AtenCallOp) -> None:
        """ATen's conv backward ``(dy, x, w, ...) -> (dx, dw, db)`` gets ``dy`` and
        ``x`` in the layout of the target's backward table, and computes ``dx`` in it."""
        shape = _backward_shape(call)
        channels_last_ = backward_prefers_channels_last(self.target, shape) if shape is not None else None
        if channels_last_ is None:
            return
        rank = shape.spatial + 2
        perm = channels_last(rank) if channels_last_ else identity(rank)
        call.operands[0] = _relayouted(call.operands[0], perm, call)
        call.operands[1] = _relayouted(call.operands[1], perm, call)
        dx = call.results[0]
        if isinstance(dx.type, TensorType) and len(shape_of(dx.type)) == rank:
            self._result_in(call, dx, perm)

    def _assign(self, conv: tsr.ConvOp, perm: tuple[int, ...]) -> None:
        conv.operands[0] = _relayouted(conv.input, perm, conv)
        conv.operands[1] = _relayouted(conv.weight, perm, conv)
        if conv.residual_input is not None:  # the residual has the result's type
            conv.operands[len(conv.operands) - 1] = _relayouted(conv.residual_input, perm, conv)
        self._result_in(conv, conv.result, perm)

    def _result_in(self, op: Operation, value: SSAValue, perm: tuple[int, ...]) -> None:
        """``op`` computes ``value`` in layout ``perm``; its users read it as before, through a relayout back."""
        old: TensorType = value.type
        if layout_of(old) == perm:
            return
        name = value.name_hint
        result = Rewriter.replace_value_with_new_type(value, with_layout(old, perm))
        back = tsr.RelayoutOp.create(operands=[result], result_types=[old])
        back.results[0].name_hint = name
        Rewriter.insert_op(back, InsertPoint.after(op))
        for u in list(result.uses):
            if u.operation is not back:
                u.operation.operands[u.index] = back.results[0]
