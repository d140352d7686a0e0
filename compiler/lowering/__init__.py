"""Lowering of the ``fused`` stage to kernel IR (stage ``kernel``, docs/kernel-ir.md).

    program = lower_to_kernels(fused_module)   # KernelProgramIR(host=..., kernels=...)

Modules: ``kernel_builder`` (a kernel function under construction, memref
types), ``scalar_ops`` (element types and elementwise ops as arith/math),
``index_maps`` (the data-movement ops as index maps), ``values`` (a body
value at a logical index), ``reductions`` (reduction loops), ``lower``
(grids, kernels and the host graph).
"""

from .kernel_builder import LoweringError, memref_type
from .lower import KernelProgramIR, lower_fused, lower_to_kernels
from .scalar_ops import Numerics

__all__ = ["KernelProgramIR", "LoweringError", "Numerics", "lower_fused", "lower_to_kernels", "memref_type"]
