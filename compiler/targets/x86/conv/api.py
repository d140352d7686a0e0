"""``conv_channels_last``: pack, compile (cached) and run a channels-last fp32 convolution.

    pw = pack_weight(w, spec_for(x, w.shape, padding=1))     # once per weight version
    y = conv_channels_last(x, pw, bias=b, residual=r, activation="silu", padding=1)
    # y == silu(F.conv2d(x, w, b, padding=1) + r), channels-last like x

``x`` is ``[N, C_in, H, W]`` (or ``[N, C_in, D, H, W]``) float32 on the cpu,
ideally stored channels-last (other strides are copied into it first). The
weight is a :class:`PackedConvWeight` (from ``pack_weight``) or a plain
``[C_out, C_in/groups, (kd,) kh, kw]`` tensor (packed on every call: tests,
one-off use). Kernels are built once per spec, thread count and path: the
object through the on-disk compile cache (``build.cached_artifact``, keyed
like every tessera kernel), the loaded kernel in this process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from tessera.compiler.build import cpu_kernel
from tessera.compiler.targets.x86.conv.build import build_conv, conv_target
from tessera.compiler.targets.x86.conv.errors import ConvIsaUnavailable, ConvOperandMismatch
from tessera.compiler.targets.x86.conv.isa import can_run_conv, select_conv_isa
from tessera.compiler.targets.x86.conv.kept import Kept, KeptPack, kept_buffer
from tessera.compiler.targets.x86.conv.kernel import signature
from tessera.compiler.targets.x86.conv.pack_kernel import build_pack_kernel, pack_kernel_name
from tessera.compiler.targets.x86.conv.packing import (
    PackedConvWeight,
    check_weight,
    pack_key,
    pack_weight,
    packed_shape,
)
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import choose_tiling
from tessera.runtime.kernel import Kernel


def weight_packer(spec: ConvSpec) -> Callable[[torch.Tensor], torch.Tensor]:
    """The function giving the packed data of a weight for ``spec`` (``pack_weight``'s
    bytes) by the packing kernel (``pack_kernel``), loaded once: what runs on every
    call where weights are packed per call."""
    if not can_run_conv(spec.isa):
        raise ConvIsaUnavailable(f"this CPU cannot run the conv path {spec.isa!r} (select_conv_isa() picks one it can)")
    name = pack_kernel_name(spec)
    kernel = cpu_kernel(name, name, lambda: conv_target(spec.isa).cache_key(), lambda: build_pack_kernel(spec))
    return _WeightPacker(spec, kernel, packed_shape(spec, choose_tiling(spec)))


class _WeightPacker:
    """A weight's packed data for ``spec`` by its packing kernel (``weight_packer``)."""

    def __init__(self, spec: ConvSpec, kernel: Kernel, shape: tuple[int, ...]):
        self.spec, self.kernel, self.shape = spec, kernel, shape
        self._weight_shape = spec.plain_weight_shape()

    def __call__(self, w: torch.Tensor, into: Kept | None = None) -> torch.Tensor:
        """Runs on every call without freezing: the weight checked here (its shape, on
        the CPU), the launch trusted. The kernel's own check of both tensors took half
        of a 64x64x3x3 pack (26 of 51 us); a dense f32 weight is read as it is (and a
        one-chunk launch calls the machine code, ``Kernel.launch_trusted``): 6.5 -> 3.9 us for a 16x16x3x3x3 weight
        (session 34). ``into``: the buffers it writes, kept between calls (``kept.KeptPack``)."""
        if not (isinstance(w, torch.Tensor) and w.dtype is torch.float32 and w.is_cpu
                and w.shape == self._weight_shape and w.is_contiguous()):
            w = w.detach().float().contiguous()
            check_weight(w, self.spec)
        out = kept_buffer(into, "packed", self.shape)
        self.kernel.launch_trusted([w, out])
        return out

    def per_call(self) -> KeptPack:
        """This packer writing into buffers kept between calls (a pack on every call)."""
        return KeptPack(self)

    def __reduce__(self) -> tuple:
        return weight_packer, (self.spec,)  # loaded again (from the compile cache) in the process that reads it


@dataclasses.dataclass(frozen=True)
class PlainWeight:
    """The weight a kernel that packs it reads (``ConvSpec.packs_weight``): ``w`` itself where
    it has the strides of ``spec.weight_layout`` (a linear's ``[K, N]`` as ``dhwio``), else a
    copy with them (a model that keeps its weights channels-last); checked like every operand."""

    spec: ConvSpec

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return _strided(w.detach(), "weight", self.spec.weight_shape(), self.spec.weight_strides())


def pack_weight_kernel(w: torch.Tensor, spec: ConvSpec) -> PackedConvWeight:
    """``pack_weight(w, spec)`` by the packing kernel: the same bytes, 3x faster on large weights."""
    check_weight(w, spec)
    return PackedConvWeight(weight_packer(spec)(w), *pack_key(spec))


def load_conv(spec: ConvSpec, features: str | None = None) -> Kernel:
    """The loaded kernel of ``spec`` (built once per process, path and thread count)."""
    if not can_run_conv(spec.isa):
        raise ConvIsaUnavailable(f"this CPU cannot run the conv path {spec.isa!r} (select_conv_isa() picks one it can)")
    kernel = cpu_kernel(spec.kernel_name, f"{spec!r} {features}", lambda: conv_target(spec.isa, features).cache_key(),
                        lambda: build_conv(spec, features))
    kernel.origin = (load_conv, (spec, features))
    return kernel


def load_conv_as(spec: ConvSpec, run: ConvSpec, features: str | None = None) -> Kernel:
    """The kernel of ``run``, a spec computing ``spec``'s conv on the same memory (a 1x1
    conv's pixels as other image rows: ``rows.rows_spec``), checking its
    tensors as ``spec``'s: the program hands it ``spec``'s tensors, whose addresses
    are all the machine code reads."""
    if run == spec:
        return load_conv(spec, features)
    loaded = load_conv(run, features)  # shared with every conv of that spec: not changed here
    kernel = loaded.checking(dataclasses.replace(loaded.signature, args=signature(spec).args))
    kernel.origin = (load_conv_as, (spec, run, features))
    return kernel


def spec_for(x: torch.Tensor, weight_shape, stride=1, padding=0, dilation=1, groups: int = 1, *, bias: bool = False,
             residual: bool = False, activation: str | None = None, isa: str | None = None,
             input_layout: str = "channels_last", output_layout: str = "channels_last") -> ConvSpec:
    """The :class:`ConvSpec` of ``conv(x, weight)`` with these arguments."""
    if not isinstance(x, torch.Tensor) or x.dim() not in (4, 5):
        got = f"rank {x.dim()}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ConvOperandMismatch(f"conv input must be a 4-D or 5-D tensor [N, C, (D,) H, W], got {got}")
    ws = tuple(weight_shape)
    if len(ws) != x.dim():
        raise ConvOperandMismatch(f"conv weight of shape {ws} does not fit a {x.dim()}-D input")
    return ConvSpec(x.shape[0], x.shape[1], ws[0], tuple(x.shape[2:]), ws[2:], stride, padding, dilation, groups,
                    bias=bias, residual=residual, activation=activation or "none", isa=isa or select_conv_isa(),
                    input_layout=input_layout, output_layout=output_layout)


def _strided(t: torch.Tensor, what: str, shape: tuple[int, ...], want: tuple[int, ...]) -> torch.Tensor:
    """``t`` if it has the strides ``want`` (up to size-1 dims), else a copy with them."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.device.type != "cpu" or tuple(t.shape) != shape:
        got = f"{t.dtype} {tuple(t.shape)} on {t.device}" if isinstance(t, torch.Tensor) else type(t).__name__
        raise ConvOperandMismatch(f"conv {what} must be a float32 cpu tensor of shape {shape}, got {got}")
    if all(s == e or n == 1 for s, e, n in zip(t.stride(), want, shape)):
        return t
    return torch.empty_strided(shape, want).copy_(t)


def conv_channels_last(x: torch.Tensor, weight: torch.Tensor | PackedConvWeight, bias: torch.Tensor | None = None,
                       residual: torch.Tensor | None = None, activation: str | None = None, *, stride=1, padding=0,
                       dilation=1, groups: int = 1, isa: str | None = None, features: str | None = None,
                       input_layout: str = "channels_last", output_layout: str = "channels_last") -> torch.Tensor:
    """``act(conv(x, weight) + bias + residual)`` as a float32 tensor, channels-last
    unless ``output_layout="contiguous"`` (then the result, and the residual it reads,
    are NCHW/NCDHW); ``input_layout="contiguous"``: the kernel reads ``x`` in NCHW/NCDHW."""
    if isinstance(weight, PackedConvWeight):
        isa = isa or weight.isa
        if weight.groups != groups:
            raise ConvOperandMismatch(f"the weight was packed for groups={weight.groups}, the conv has groups={groups}")
        wshape = (weight.out_channels, weight.cin_g, *weight.kernel)
    elif isinstance(weight, torch.Tensor):
        wshape = tuple(weight.shape)
    else:
        raise ConvOperandMismatch(f"conv weight must be a tensor or a PackedConvWeight, not {type(weight).__name__}")
    spec = spec_for(x, wshape, stride, padding, dilation, groups, bias=bias is not None, residual=residual is not None,
                    activation=activation, isa=isa, input_layout=input_layout, output_layout=output_layout)
    if isinstance(weight, PackedConvWeight):
        weight.check(spec)
        packed = weight
    else:
        check_weight(weight, spec)
        packed = pack_weight(weight, spec)
    kernel = load_conv(spec, features)
    args = [_strided(x, "input", spec.input_shape(), spec.input_strides()), packed.data]
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (spec.out_channels,) or bias.device.type != "cpu":
            raise ConvOperandMismatch(f"conv bias must be a cpu tensor of shape ({spec.out_channels},)")
        args.append(bias.to(torch.float32).contiguous())
    if residual is not None:
        args.append(_strided(residual, "residual", spec.output_shape(), spec.output_strides()))
    out = torch.empty_strided(spec.output_shape(), spec.output_strides())
    kernel(*args, out)
    return out
