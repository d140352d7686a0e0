"""Which host-graph ops only prepare library weights from parameters, so the
program can run them once per parameter version instead of on every call.

    %wp = tsr.polyphase_weight %arg9 {...}                      // reads a parameter only
    %bp = tsr.launch @fused_3(%arg10) : (...) -> tensor<256xf32>  // likewise
    %c  = tsr.conv %xp, %wp, %bp {...}
    // %wp and %bp: computed on the first call and whenever %arg9 or %arg10 changes

An op prepares a weight when its value reaches a convolution's weight or bias
through ops that read only function arguments and constants, and it is
deterministic (``op_classes.reads_only_arguments``): a constant, a kernel
launch, an op tessera computes in its own kernels or a weight transform
(``tsr.polyphase_weight``); never an ATen call, which may draw random numbers. Which arguments are parameters the graph does not say;
a prepared value keyed on an argument that changes every call is simply
computed every call (``weight_cache.PerVersion``).
"""

from __future__ import annotations

from xdsl.ir import Block, Operation

from tessera.dialects import tsr
from tessera.dialects.tsr.op_classes import reads_only_arguments


def weight_preparation(block: Block) -> list[Operation]:
    """The ops of ``block`` that prepare convolution weights, in program order."""
    needed: set[Operation] = set()
    stack = [v for op in block.ops if isinstance(op, tsr.ConvOp) for v in (op.weight, op.bias)
             if v is not None and isinstance(v.owner, Operation) and reads_only_arguments(v)]
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, Operation) and owner not in needed:
            needed.add(owner)
            stack.extend(owner.operands)
    return [op for op in block.ops if op in needed]
