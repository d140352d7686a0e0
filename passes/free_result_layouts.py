"""``free-result-layouts``: returns each result marked ``{tsr.free_layout}`` in
the layout that costs least to make, instead of the strides eager gives it.

A training forward returns what its backward reads (AOTAutograd's saved
activations). Nobody but the backward sees those tensors, and the backward is
compiled for the strides the forward reports (``compiler/saved_layouts.py``),
so their layout is the compiler's to choose. A free result that only a
relayout of it makes is returned before the relayout; one that is relayouted
for all its other users is returned after it:

    func.func @forward(...) -> (tensor<8x32x16x16xf32, #tsr.layout<nchw>> {tsr.free_layout}, ...) {
      %c = tsr.conv %x, %w, %b {...} : (...) -> tensor<8x32x16x16xf32, #tsr.layout<nhwc>>
      %y = tsr.relayout %c : (...nhwc>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
      func.return %y, ...
    // becomes
      func.return %c, ...        // the result's type is now the nhwc one

    %r = tsr.relu %a : (...nchw>) -> tensor<8x32x16x16xf32, #tsr.layout<nchw>>
    %t = tsr.relayout %r : (...nchw>) -> tensor<8x32x16x16xf32, #tsr.layout<nhwc>>   // for a conv
    func.return %r, ...
    // becomes
    func.return %t, ...        // %r's only users are now relayouts: hoist-relayouts climbs it

It runs after ``assign-layouts`` (which makes the relayouts around convs) and
again after ``hoist-relayouts`` (which makes new ones at returned values). A
function argument is returned as it is either way; a result not marked keeps
its type: the caller reads it with eager's strides.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, UnitAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from tessera.dialects import tsr

FREE_LAYOUT = "tsr.free_layout"
"""The result attribute that lets a result be returned in any layout."""


def free_results(fn: func.FuncOp) -> frozenset[int]:
    """The indices of ``fn``'s results marked ``{tsr.free_layout}``."""
    if fn.res_attrs is None:
        return frozenset()
    return frozenset(i for i, d in enumerate(fn.res_attrs.data) if FREE_LAYOUT in d.data)


def mark_free(fn: func.FuncOp, indices: frozenset[int] | set[int]) -> None:
    """Mark results ``indices`` of ``fn`` ``{tsr.free_layout}``."""
    if not indices:
        return
    count = len(fn.function_type.outputs.data)
    fn.res_attrs = ArrayAttr([DictionaryAttr({FREE_LAYOUT: UnitAttr()} if i in indices else {})
                              for i in range(count)])


def cheapest_to_return(v: SSAValue) -> SSAValue:
    """The value to return for a free result ``v``: where only the return reads
    ``v`` and a relayout makes it, what the relayout reads (the relayout goes);
    where every other user of ``v`` is a relayout to one type, that relayout
    (``v`` is then needed in no layout of its own); else ``v``. A function
    argument is returned as it comes (a relayout of it may yet fold into the
    conv that reads it)."""
    if isinstance(v, BlockArgument):
        return v
    others = [u.operation for u in v.uses if not isinstance(u.operation, func.ReturnOp) and _live(u.operation)]
    if isinstance(v.owner, tsr.RelayoutOp):
        return v.owner.input if not others else v
    if others and all(isinstance(u, tsr.RelayoutOp) and u.result.type == others[0].result.type for u in others):
        return others[0].results[0]
    return v


def _live(op: Operation) -> bool:
    """Whether ``op`` counts as a user: a relayout that this pass left unused does not."""
    return not isinstance(op, tsr.RelayoutOp) or bool(op.result.uses)


@dataclass(frozen=True)
class FreeResultLayouts(ModulePass):
    name = "free-result-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            free = free_results(fn)
            ret = fn.body.block.last_op if fn.body.blocks else None
            if not free or not isinstance(ret, func.ReturnOp):
                continue
            for i in sorted(free):
                ret.operands[i] = cheapest_to_return(ret.operands[i])
            fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data),
                                                       [v.type for v in ret.operands])
