"""tessera's conv kernel for a ``tsr.conv`` of dynamic sizes: one kernel per
concrete size, built when a call first brings it (through the compile cache,
like every spec's kernel), behind the one program of the graph.

    %y = tsr.conv %x, %w, %b {activation = "silu", tsr.impl = "avx512", ...}
         : (tensor<?x64x?x?xf32, #tsr.layout<nhwc>>, ...) -> tensor<?x64x?x?xf32, #tsr.layout<nhwc>>
    // the host program's steps (host_program.py)
    Call(pack, (w,), (pw,))            # the weight packed: its blocks depend on channels and kernel only
    SizedAlloc(y, conv.layout, (x,))   # kept between runs while the sizes repeat (runtime/program.py)
    Launch(conv := SizedConv(spec), (x, pw, b, y))
    // at 1x64x32x32: conv2d_avx512_n1_64to64_32x32_k3x3_p1x1_bias_silu, built once, then reused

The kernel's spec is the conv's spec (``conv_choice.conv_spec``: at batch 1 and the
smallest input it takes) with the batch and the input's spatial sizes of the
call; :meth:`SizedConv.layout` gives the output's placement from them, and the
program allocates it like any kernel output of dynamic sizes, so a repeated size
writes last run's buffer instead of faulting in a new one. The weight is packed
once for every size (``packing.pack_key`` names no size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

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
    """``conv(x, packed_w, [bias], [residual], out)`` on the kernel of ``x``'s sizes:
    a program's ``Launch`` (``runtime.kernel.Launchable``)."""

    __name__ = "tessera_conv"

    def __init__(self, spec: ConvSpec):
        self.spec = spec
        self._kernels: dict[tuple[int, ...], _Sized] = {}

    @property
    def name(self) -> str:
        return f"{self.spec.kernel_name} (per size)"

    def _sized(self, shape: tuple[int, ...]) -> _Sized:
        found = self._kernels.get(shape)
        if found is None:
            if len(self._kernels) >= SIZES_KEPT:
                self._kernels.pop(next(iter(self._kernels)))
            spec = dataclasses.replace(self.spec, batch=shape[0], input_size=shape[2:])
            found = self._kernels[shape] = _Sized(spec, load_conv(spec), spec.output_shape(), spec.output_strides())
        return found

    def layout(self, x: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
        """The output's shape, strides and dtype for input ``x`` (a ``SizedAlloc``'s layout)."""
        found = self._sized(tuple(x.shape))
        return found.shape, found.strides, x.dtype

    def __call__(self, *tensors: torch.Tensor) -> None:
        """Launches on ``tensors`` (input first, output last), checking them once per placement."""
        found = self._sized(tuple(tensors[0].shape))
        seen = placements_of(tensors)
        if seen == found.checked:
            found.kernel.launch_trusted(tensors)
        else:
            found.kernel.launch(*tensors)
            found.checked = seen

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        """Launches on tensors placed as a checked run's (the program's trusted run):
        the kernel of their sizes was checked then, unless it was dropped since."""
        found = self._sized(tuple(tensors[0].shape))
        if found.checked is None:
            self(*tensors)
        else:
            found.kernel.launch_trusted(tensors)

    def bind(self, tensors: Sequence[torch.Tensor]) -> Kernel:
        """The kernel of ``tensors``' sizes (a program binding its sizes, ``runtime/size_binding.py``)."""
        return self._sized(tuple(tensors[0].shape)).kernel

    def __reduce__(self) -> tuple:
        return SizedConv, (self.spec,)
