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

A 3x3 conv that Winograd computes at static sizes (``winograd.py``) is, at dynamic
sizes, a :class:`SizedWinograd`: per size, Winograd F(m x m, 3 x 3) with the ``m``
the measured model gives that size's tiles, or where it gives none the direct
kernel (under freezing) or the library's call (without: as at static sizes); it
takes the conv's weight and packs it in each form a size asks for.

The kernel's spec is the conv's spec (``conv_choice.conv_spec``: at batch 1 and the
smallest input it takes) with the batch and the input's spatial sizes of the
call; :meth:`SizedConv.layout` gives the output's placement from them, and the
program allocates it like any kernel output of dynamic sizes, so a repeated size
writes last run's buffer instead of faulting in a new one. The weight is packed
once for every size (``packing.pack_key`` names no size).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import torch

from tessera.compiler.targets.x86.conv.api import load_conv_as, weight_packer
from tessera.compiler.targets.x86.conv.kept import KeptPack
from tessera.compiler.targets.x86.conv.rows import rows_spec
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.winograd import WinogradConv, WinogradPacker
from tessera.compiler.targets.x86.conv.winograd_spec import WinogradSpec
from tessera.compiler.weight_cache import PackedWeight
from tessera.passes.target_models import outweighs
from tessera.runtime.kernel import Launchable, placements_of


@dataclasses.dataclass
class _Sized:
    """One size's kernel: its spec, the loaded kernel, the output's shape and
    strides, the operands' placements it was last checked with, and (a
    :class:`SizedWinograd`'s) Winograd's ``m``, None for the direct kernel."""

    spec: ConvSpec
    kernel: Launchable
    shape: tuple
    strides: tuple
    checked: tuple | None = None
    m: int | None = None


SIZES_KEPT = 32
"""Sizes whose kernels one conv keeps at hand (others are loaded again, from the process's kernels)."""


class SizedConv:
    """``conv(x, packed_w, [bias], [residual], out)`` on the kernel of ``x``'s sizes:
    a program's ``Launch`` (``runtime.kernel.Launchable``).

    Given a ``library`` call (a 1x1 conv without freezing: ``conv_choice.gemm_per_size``),
    a size whose weight outweighs its output (``target_models.outweighs``, the static
    rule) runs the library instead, on the plain weight: a classifier's 1x1 conv of
    ``addmm-as-conv`` at 8 rows, 1280 -> 1000, is then one GEMM, 0.36 ms, where the
    kernel packed 5 MB of weight for 8 rows, 0.61 ms (session 39). With ``packs`` the
    launch takes the plain weight and packs it at the sizes the kernel runs, into a
    kept buffer (:meth:`packed`): the library's sizes pack nothing."""

    __name__ = "tessera_conv"

    def __init__(self, spec: ConvSpec, library: Callable[..., torch.Tensor] | None = None, packs: bool = False):
        self.spec = spec
        self.library = library
        self.packs = packs
        self._kernels: dict[tuple[int, ...], _Sized] = {}
        self._forms: dict[int | None, Callable[[torch.Tensor], torch.Tensor]] = {}

    @property
    def name(self) -> str:
        return f"{self.spec.kernel_name} (per size)"

    def _sized(self, shape: tuple[int, ...]) -> _Sized:
        found = self._kernels.get(shape)
        if found is None:
            if len(self._kernels) >= SIZES_KEPT:
                self._kernels.pop(next(iter(self._kernels)))
            spec = dataclasses.replace(self.spec, batch=shape[0], input_size=shape[2:])
            kernel, m = self._load(spec)
            found = self._kernels[shape] = _Sized(spec, kernel, spec.output_shape(), spec.output_strides(), m=m)
        return found

    def _load(self, spec: ConvSpec) -> tuple[Launchable, int | None]:
        """The kernel of one size's ``spec`` (a 1x1 conv's pixels in rows: ``rows.rows_spec``),
        or the library's call where its weight outweighs its output, and Winograd's ``m``
        (None: the direct kernel)."""
        if self.library is not None and outweighs(math.prod(spec.weight_shape()), math.prod(spec.output_shape())):
            return _LibraryLaunch(self.library, spec), None
        return load_conv_as(spec, rows_spec(spec)), None

    def layout(self, x: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...], torch.dtype]:
        """The output's shape, strides and dtype for input ``x`` (a ``SizedAlloc``'s layout)."""
        found = self._sized(tuple(x.shape))
        return found.shape, found.strides, x.dtype

    def __call__(self, *tensors: torch.Tensor) -> None:
        """Launches on ``tensors`` (input first, output last), checking them once per placement."""
        found = self._sized(tuple(tensors[0].shape))
        args = self._args(found, tensors)
        seen = placements_of(args)
        if seen == found.checked:
            found.kernel.launch_trusted(args)
        else:
            found.kernel(*args)
            found.checked = seen

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        """Launches on tensors placed as a checked run's (the program's trusted run):
        the kernel of their sizes was checked then, unless it was dropped since."""
        found = self._sized(tuple(tensors[0].shape))
        if found.checked is None:
            self(*tensors)
        else:
            found.kernel.launch_trusted(self._args(found, tensors))

    def packed(self, m: int | None, w: torch.Tensor) -> torch.Tensor:
        """``w`` in the form of Winograd F(m x m) (None: the direct kernel's), made once per
        weight version under freezing (no ``library``), else on every call."""
        form = self._forms.get(m)
        if form is None:
            packer = weight_packer(self.spec) if m is None else WinogradPacker(WinogradSpec(self.spec, m))
            form = self._forms[m] = PackedWeight(packer, freezing=True) if self.library is None else KeptPack(packer)
        return form(w)

    def _args(self, found: _Sized, tensors: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        """What the kernel of ``found``'s size is launched on: with ``packs``, the weight
        packed for it (the library reads the plain weight)."""
        if not self.packs or isinstance(found.kernel, _LibraryLaunch):
            return tensors
        x, w, *rest = tensors
        return (x, self.packed(found.m, w), *rest)

    def bind(self, tensors: Sequence[torch.Tensor]) -> Launchable:
        """The kernel of ``tensors``' sizes (a program binding its sizes, ``runtime/size_binding.py``)."""
        found = self._sized(tuple(tensors[0].shape))
        return _WithForm(self, found) if self.packs else found.kernel

    def __reduce__(self) -> tuple:
        return SizedConv, (self.spec, self.library, self.packs)


def own_copy(w: torch.Tensor) -> torch.Tensor:
    """A :class:`SizedWinograd`'s weight as the host program prepares it: a tensor of
    its own, so a weight prepared again (new parameters, a buffer written again) is
    a new tensor to the forms' caches (``weight_cache``: storage, version)."""
    return w.clone()


class SizedWinograd(SizedConv):
    """``conv(x, w, [bias], [residual], out)`` of a stride-1 3x3 conv of dynamic sizes,
    ``w`` its weight: at each size Winograd F(m x m, 3 x 3) with ``m = choose(spec)``
    (the x86 model's choice at that size's tiles, ``conv_choice.winograd_choice``),
    or where ``choose`` gives None the direct kernel, or the conv's ``library`` call.

        conv = SizedWinograd(spec, winograd_m_at)   # under freezing, 64->64 3x3
        conv(x_56x56, w, y)      # F(4x4): w transformed and packed for the GEMM, once
        conv(x_7x7, w, y2)       # too few tiles (AVX-512): the direct kernel, w packed for it, once

        conv = SizedWinograd(spec, winograd_m_per_call_at, OneDnnConv(op), direct_at)   # without freezing
        conv(x_56x56, w, y)      # F(4x4): w transformed and packed on every call, into kept buffers
        conv(x_7x7, w, y2)       # as a static conv of that size: the direct kernel where
                                 # ``direct(spec)`` (at most 13x13 points), w packed per call,
                                 # else oneDNN's call on the plain weight, its result copied into y2

    Under freezing (no ``library``) each form of the weight is made the first time a
    size needs it, then kept per weight version (``weight_cache.PackedWeight``; ``w``
    is the program's own copy, :func:`own_copy`), so sizes called in turn pack
    nothing. Without freezing each form is made on every call
    (``kept.KeptPack``), as a static conv's."""

    def __init__(self, spec: ConvSpec, choose: Callable[[ConvSpec], int | None],
                 library: Callable[..., torch.Tensor] | None = None, direct: Callable[[ConvSpec], bool] | None = None):
        super().__init__(spec, library, packs=True)
        self.choose = choose
        self.direct = direct
        """With a ``library``: whether a size Winograd leaves runs on the direct kernel
        (``conv_choice.direct_at``: the static model's class at that size), else the library's call."""

    @property
    def name(self) -> str:
        return f"winograd_{self.spec.kernel_name} (per size)"

    def _load(self, spec: ConvSpec) -> tuple[Launchable, int | None]:
        m = self.choose(spec)
        if m is not None:
            return WinogradConv(spec, m), m
        if self.library is None or (self.direct is not None and self.direct(spec)):
            return super()._load(spec)
        return _LibraryLaunch(self.library, spec), None

    def __reduce__(self) -> tuple:
        return SizedWinograd, (self.spec, self.choose, self.library, self.direct)


class _LibraryLaunch:
    """A library conv (``library_calls.OneDnnConv``) at one size, as a launch: its result copied into the output."""

    def __init__(self, library: Callable[..., torch.Tensor], spec: ConvSpec):
        self.library = library
        self.name = f"{getattr(library, '__name__', 'library_conv')} {spec.kernel_name}"

    def __call__(self, *tensors: torch.Tensor) -> None:
        *operands, out = tensors
        out.copy_(self.library(*operands))

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        self(*tensors)


class _WithForm:
    """One size of a :class:`SizedConv` that packs its weight: its kernel, launched on the weight's form for it."""

    def __init__(self, conv: SizedConv, found: _Sized):
        self.conv, self.found = conv, found
        self.name = f"{found.kernel.name} (its weight packed for it)"

    def __call__(self, *tensors: torch.Tensor) -> None:
        self.found.kernel(*self.conv._args(self.found, tensors))

    def launch_trusted(self, tensors: Sequence[torch.Tensor]) -> None:
        self.found.kernel.launch_trusted(self.conv._args(self.found, tensors))
