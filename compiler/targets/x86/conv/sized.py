"""tessera's conv kernel for a ``tsr.conv`` of dynamic sizes: one kernel per
concrete size, built when a call first brings it (through the compile cache,
like every spec's kernel), behind the one program of the graph.

    %y = tsr.conv %x, %w, %b {activation = "silu", tsr.impl = "avx512", ...}
         : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, ...) -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
    // the host program's steps (host_program.py)
    Call(pack, (w,), (pw,))            # the weight packed: its blocks depend on channels and kernel only
    Call(SizedConv(spec), (x, pw, b), (y,))
    // at 1x64x32x32: conv2d_avx512_n1_64to64_32x32_k3x3_p1x1_bias_silu, built once, then reused

The kernel's spec is the conv's spec (``conv_choice.conv_spec``: at batch 1 and the
smallest input it takes) with the batch and the input's spatial sizes of the
call; the output is allocated from them. The weight is packed once for every
size (``packing.pack_key`` names no size).
"""

from __future__ import annotations

import dataclasses

import torch

from tessera.compiler.targets.x86.conv.api import load_conv
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.runtime.kernel import Kernel, placements_of


@dataclasses.dataclass
class _Sized:
    """One size's kernel: its spec, the loaded kernel, the output's shape and
    strides, and the operands' placements it was last checked with."""

    spec: ConvSpec
    kernel: Kernel
    shape: tuple
    strides: tuple
    checked: tuple | None = None


SIZES_KEPT = 32
"""Sizes whose kernels one conv keeps at hand (others are loaded again, from the process's kernels)."""


class SizedConv:
    """``conv(x, packed_w, [bias], [residual])`` on the kernel of ``x``'s sizes."""

    __name__ = "tessera_conv"

    def __init__(self, spec: ConvSpec):
        self.spec = spec
        self._kernels: dict[tuple[int, ...], _Sized] = {}

    def _sized(self, shape: tuple[int, ...]) -> _Sized:
        found = self._kernels.get(shape)
        if found is None:
            if len(self._kernels) >= SIZES_KEPT:
                self._kernels.pop(next(iter(self._kernels)))
            spec = dataclasses.replace(self.spec, batch=shape[0], input_size=shape[2:])
            found = self._kernels[shape] = _Sized(spec, load_conv(spec), spec.output_shape(), spec.output_strides())
        return found

    def __call__(self, x: torch.Tensor, w: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        found = self._sized(tuple(x.shape))
        out = torch.empty_strided(found.shape, found.strides, dtype=x.dtype, device=x.device)
        tensors = (x, w, *operands)
        # the kernel checks its operands once per placement; the output is new, so aliases nothing
        seen = placements_of(tensors)
        if seen == found.checked:
            found.kernel.launch_trusted([*tensors, out])
        else:
            found.kernel.launch(*tensors, out)
            found.checked = seen
        return out

    def __reduce__(self) -> tuple:
        return SizedConv, (self.spec,)
