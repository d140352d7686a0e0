"""A stride-1 3x3 conv by Winograd F(m x m, 3 x 3): three launches behind one.

    %y = tsr.conv %x, %w, %b {..., tsr.impl = "avx512:winograd4"}
    // the host program's steps (host_program.py)
    Call(WinogradPacker(spec), (w,), (pw,))      # U = G w G^T, packed for the GEMM (once, under freezing)
    Alloc(y, nhwc type)
    Launch(WinogradConv(spec), (x, pw, b, y))    # input transform -> grouped 1x1 GEMM -> output transform

:class:`WinogradConv` is launched like a kernel (checked on a program's first
run, then trusted): the input transform writes ``V``, tessera's conv kernel
computes the batched GEMM as a grouped 1x1 conv into ``M``, and the output
transform writes ``y`` with the conv's epilogue (``winograd_spec``). ``V`` and
``M`` are scratch buffers that every Winograd conv of a thread shares. The
weight transform is one float32 GEMM (:func:`transform_weight`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections.abc import Sequence

import torch

from tessera.compiler.build import cpu_kernel
from tessera.compiler.codegen.kernel_family import KernelFamily
from tessera.compiler.targets.x86.conv.api import load_conv, weight_packer
from tessera.compiler.targets.x86.conv.build import conv_target
from tessera.compiler.targets.x86.conv.errors import ConvIsaUnavailable
from tessera.compiler.targets.x86.conv.isa import can_run_conv
from tessera.compiler.targets.x86.conv.kept import Kept, KeptPack, kept_buffer
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.winograd_kernels import WINOGRAD_INPUT, WINOGRAD_OUTPUT
from tessera.compiler.targets.x86.conv.winograd_spec import TRANSFORMS, WinogradSpec
from tessera.runtime.kernel import Kernel


@functools.cache
def _weight_transform(m: int, flipped: bool = False) -> torch.Tensor:
    """``G (x) G``, ``[a*a, 9]`` in float32: row ``i*a + j`` of ``U = G w G^T`` is ``w``'s 9 taps weighed by it;
    ``flipped``: its columns reversed, for taps read ``K-1-t`` (``ConvSpec.flipped_weight``)."""
    _, g, _ = TRANSFORMS[m]
    gm = torch.tensor([[float(x) for x in row] for row in g], dtype=torch.float64)
    t = torch.kron(gm, gm)
    return (t.flip(1) if flipped else t).to(torch.float32).contiguous()


def transform_weight(w: torch.Tensor, ws: WinogradSpec, into: Kept | None = None) -> torch.Tensor:
    """``U[p, co, ci] = (G w[co, ci] G^T)[p]`` as the GEMM's grouped 1x1 weight ``[P*C_out, C_in, 1, 1]``:
    one float32 GEMM, ``(G (x) G) @ w.reshape(C_out*C_in, 9)^T`` (9 products a term: within an ulp or
    two of the exact transform; Winograd's own rounding is hundreds of times larger), cheap
    enough to run on every call where the weight is not frozen (256->256: 3 ms, 30x a float64 einsum).
    ``into``: its buffer, kept between calls (``kept.KeptPack``)."""
    c = ws.conv
    rows, cols = c.plain_weight_shape()[:2]  # [C_in, C_out] of a flipped weight: U's groups read transposed
    kt = ws.gemm.kernel[0]  # a 3-D conv's time taps: the GEMM's (``U[p, co, ci, k]``)
    taps = w.detach().reshape(rows * cols * kt, 9)
    u = kept_buffer(into, "transformed", (ws.points, rows * cols * kt))
    torch.mm(_weight_transform(ws.m, c.flipped_weight), taps.t(), out=u)
    return u.view(ws.points * rows, cols, kt, 1)


class WinogradPacker:
    """A 3x3 weight as the Winograd GEMM reads it: transformed, then packed by the conv's packing kernel."""

    def __init__(self, ws: WinogradSpec):
        self.ws = ws
        self._pack = weight_packer(dataclasses.replace(ws.gemm, flipped_weight=ws.conv.flipped_weight))

    def __call__(self, w: torch.Tensor, into: Kept | None = None) -> torch.Tensor:
        return self._pack(transform_weight(w, self.ws, into), into)

    def per_call(self) -> KeptPack:
        """This packer writing into buffers kept between calls (a pack on every call)."""
        return KeptPack(self)

    def __reduce__(self) -> tuple:
        return WinogradPacker, (self.ws,)


def _load(family: KernelFamily, ws: WinogradSpec) -> Kernel:
    name = family.signature(ws).name
    return cpu_kernel(name, f"{name} {ws!r}", lambda: conv_target(ws.isa).cache_key(), lambda: family.artifact(ws))


class _Scratch(threading.local):
    """``V`` and ``M`` of the Winograd convs this thread runs, one pair of buffers grown
    to the largest: a program runs its steps one after another, so its convs share them
    (memory of the largest conv's transforms, not of every conv's)."""

    def __init__(self) -> None:
        self.flat: list[torch.Tensor] = [torch.empty(0), torch.empty(0)]

    def views(self, ws: WinogradSpec) -> tuple[torch.Tensor, torch.Tensor]:
        c = ws.conv
        out = []
        for k, (channels, frames) in enumerate(zip((c.in_channels, c.out_channels), ws.frames)):
            shape = ws.transformed_shape(channels, frames)
            if self.flat[k].numel() < math.prod(shape):
                self.flat[k] = torch.empty(math.prod(shape))
            out.append(self.flat[k].as_strided(shape, ws.transformed_strides(channels, frames)))
        return out[0], out[1]


_SCRATCH = _Scratch()


class WinogradConv:
    """``conv(x, packed_w, [bias], [residual], out)`` by Winograd: the three kernels
    behind one program step (``runtime.kernel.Launchable``)."""

    def __init__(self, spec: ConvSpec, m: int = 4):
        if not can_run_conv(spec.isa):
            raise ConvIsaUnavailable(f"this CPU cannot run the conv path {spec.isa!r}")
        self.ws = ws = WinogradSpec(spec, m)
        # the transforms never read the weight: one build for a conv and an input gradient of its sizes
        same = WinogradSpec(dataclasses.replace(spec, flipped_weight=False), m) if spec.flipped_weight else ws
        self.kernels = (_load(WINOGRAD_INPUT, same.input_planes), load_conv(ws.gemm),
                        _load(WINOGRAD_OUTPUT, same.output_planes))
        self._planes: tuple[tuple, ...] | None = None
        """Of a 3-D conv, ``(shape, strides)`` of its NDHWC input, its output (and residual),
        ``V`` and ``M`` as the transforms' batches of planes (the same memory): made once."""
        if spec.spatial_dims == 3:
            i, o = ws.input_planes, ws.output_planes
            self._planes = ((i.conv.input_shape(), i.conv.input_strides()),
                            (o.conv.output_shape(), o.conv.output_strides()),
                            (i.transformed_shape(spec.in_channels), i.transformed_strides(spec.in_channels)),
                            (o.transformed_shape(spec.out_channels), o.transformed_strides(spec.out_channels)))
        self._views_of: tuple[torch.Tensor, ...] | None = None
        """The scratch blocks ``V`` and ``M`` last came from, and the views of them (``_views``)."""

    @property
    def name(self) -> str:
        return self.ws.name

    def __repr__(self) -> str:
        return f"WinogradConv(@{self.name})"

    def __reduce__(self) -> tuple:
        return WinogradConv, (self.ws.conv, self.ws.m)

    def _views(self) -> tuple[torch.Tensor, ...]:
        """``V`` and ``M`` on this thread's scratch (and, of a 3-D conv, the same as the
        transforms' planes): last call's views while its blocks are the same: building
        them cost ~30 us of Python a launch, its three kernels ~8 (16 -> 16 at 8x8; with
        the views kept the launch takes ~10 us; DenseNet-121 runs 42 a call)."""
        flat, kept = _SCRATCH.flat, self._views_of
        if kept is not None and kept[0] is flat[0] and kept[1] is flat[1]:
            return kept[2:]
        v, m = _SCRATCH.views(self.ws)
        planes = (v.as_strided(*self._planes[2]), m.as_strided(*self._planes[3])) if self._planes else (v, m)
        self._views_of = (flat[0], flat[1], v, m, *planes)
        return self._views_of[2:]

    def _steps(self, tensors: Sequence[torch.Tensor]) -> zip:
        x, w, *rest = tensors
        v, m, v_planes, m_planes = self._views()
        if self._planes:  # NDHWC tensors as the N*D NHWC planes the transforms take
            x_planes, y_planes = self._planes[:2]
            n_bias = int(self.ws.conv.bias)  # then the residual and the output, NDHWC as well
            x = x.as_strided(*x_planes)
            rest = [*rest[:n_bias], *(t.as_strided(*y_planes) for t in rest[n_bias:])]
        return zip(self.kernels, ((x, v_planes), (v, w, m), (m_planes, *rest)), strict=True)

    def __call__(self, *tensors: torch.Tensor) -> None:
        for kernel, args in self._steps(tensors):
            kernel(*args)

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        for kernel, args in self._steps(tensors):
            kernel.launch_trusted(args)
