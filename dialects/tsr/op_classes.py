"""Which ``tsr`` ops tessera's own kernels compute and which are library calls.

A *kernel op* reads its operands by logical index and may write its result in
any layout: the kernel that computes it takes the strides from the types, so
the layout passes may change its result layout freely (``fuse-relayouts``)
and let it read any operand layout. A *library op* (a convolution or GEMM
through oneDNN/cuDNN, an ATen fallback) gets and gives the layouts its types
name, and the library decides what it can take: relayouts before and after it
are real work. ``tsr.polyphase_weight`` is a host op too: a weight transform
run once per weight version (``compiler/weight_preparation.py``).

    %y = tsr.silu %x : (tensor<1x8x4x4xf32, #tsr.layout<nchw>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>  // kernel op
    %c = tsr.conv %y, %w : (...) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>                                  // library op
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from .dim_sources import sized_at_run_time
from .ops_core import AtenCallOp, ConstantOp, ConvertOp, RelayoutOp
from .ops_elementwise import ELEMENTWISE_OPS
from .ops_fused import LaunchOp
from .ops_nn import REDUCTION_OPS, AddmmOp, BmmOp, ConvOp, IntMmOp, MatmulOp, ScaledIntMmOp, UpsampleOp
from .ops_polyphase import PolyphaseInterleaveOp, PolyphaseWeightOp
from .ops_shape import ConcatOp, ExpandOp, PadOp, PermuteOp, ReshapeOp, SliceOp

KERNEL_OPS: tuple[type[Operation], ...] = (
    *ELEMENTWISE_OPS,
    ConvertOp,
    RelayoutOp,
    PadOp,
    PermuteOp,
    ReshapeOp,
    ExpandOp,
    SliceOp,
    ConcatOp,
    UpsampleOp,
    PolyphaseInterleaveOp,
    *REDUCTION_OPS,
)
LIBRARY_OPS: tuple[type[Operation], ...] = (ConvOp, MatmulOp, BmmOp, AddmmOp, IntMmOp, ScaledIntMmOp, AtenCallOp,
                                           PolyphaseWeightOp)


def is_kernel_op(op: Operation) -> bool:
    """True when tessera computes ``op`` in a kernel of its own (any layouts): not
    an op whose dynamic result dims a kernel cannot size, which stays on the host
    (``dim_sources.sized_at_run_time``; a reshape into a product of sizes):

        %v = tsr.reshape %x, %m1 : (tensor<1x96x?x?xf32, ...>, i64) -> tensor<1x1x96x?xf32, ...>   // h * w: host
    """
    return isinstance(op, KERNEL_OPS) and sized_at_run_time(op)


# Operands that their library op reorders into its own blocked format once per
# weight (and so reads in any layout): the convolution's weight (oneDNN's reorder).
PACKED_WEIGHT_OPERANDS: dict[type[Operation], tuple[int, ...]] = {ConvOp: (1,)}


def is_packed_weight(op: Operation, index: int) -> bool:
    """True when operand ``index`` of ``op`` is a weight the op packs itself."""
    return index in PACKED_WEIGHT_OPERANDS.get(type(op), ())


# Ops whose result depends on their operands alone (no random numbers, no
# library state): a value they compute from function arguments and constants
# may be computed once per version of those arguments.
DETERMINISTIC_OPS: tuple[type[Operation], ...] = (ConstantOp, LaunchOp, PolyphaseWeightOp, *KERNEL_OPS)


def reads_only_arguments(v: SSAValue) -> bool:
    """``v`` is a function argument, or computed from arguments and constants by
    :data:`DETERMINISTIC_OPS` alone (no library op's result reaches it).

        %s = tsr.rsqrt %var          // true: an argument through a kernel op
        %y = tsr.conv %x, %w         // false: a library op's result
    """
    stack, seen = [v], set()
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        if isinstance(u.owner, Operation):
            if not isinstance(u.owner, DETERMINISTIC_OPS):
                return False
            stack.extend(u.owner.operands)
    return True
