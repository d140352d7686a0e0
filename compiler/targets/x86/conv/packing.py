"""Weights packed once into the layout the microkernels stream.

    pw = pack_weight(w, spec)        # w: [C_out, C_in/groups, (kd,) kh, kw] float32
    dense:      pw.data[gb, kd, kh, kw, ci, j] == w[g*Cg + b*nr + j, ci, kd, kh, kw]   (gb = g*blocks + b)
    channelwise: pw.data[kd, kh, kw, r, c]     == w[c // k * k + (c % k + r) % k, c % k, kd, kh, kw]   (k: group width)

Dense: the group's output channels in blocks of ``nr = nv * lanes`` (``DHWIO``
with O blocked to the register tile), zero past the group's last channel, so
one block is what a tile reads, in order: per tap, per input channel, ``nv``
contiguous vectors. Channelwise (depthwise, ``k = 1``, or narrow groups of ``k``
channels: ``tiling``): taps outer, then the ``k`` rotations of each group's weights,
channels inner, zero-padded to the channel blocks: lane ``c`` of rotation ``r`` holds
the weight from input channel ``c`` to its group's output channel ``r`` places on, so a
tile multiplies the input vector as loaded (``microkernel``). Pure torch (compile time,
once per weight version).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tessera.compiler.targets.x86.conv.errors import ConvOperandMismatch
from tessera.compiler.targets.x86.conv.spec import ConvSpec
from tessera.compiler.targets.x86.conv.tiling import Tiling, choose_tiling


def packed_shape(spec: ConvSpec, til: Tiling) -> tuple[int, ...]:
    kd, kh, kw = spec.as3d("kernel")
    if til.channelwise:
        return (kd, kh, kw, til.group_width, til.blocks * til.nr)
    return (spec.groups * til.blocks, kd, kh, kw, spec.cin_g, til.nr)


def pack_key(spec: ConvSpec) -> tuple:
    """What a packing depends on (two specs with one key share a packed weight)."""
    til = choose_tiling(spec)
    return (spec.out_channels, spec.cin_g, spec.kernel, spec.groups, spec.isa, til.nr, til.channelwise)


@dataclass(frozen=True, eq=False)
class PackedConvWeight:
    """A packed weight and what it was packed for (``w``'s shape, groups, path, block)."""

    data: torch.Tensor
    out_channels: int
    cin_g: int
    kernel: tuple[int, ...]
    groups: int
    isa: str
    nr: int
    channelwise: bool

    @property
    def key(self) -> tuple:
        return (self.out_channels, self.cin_g, self.kernel, self.groups, self.isa, self.nr, self.channelwise)

    def check(self, spec: ConvSpec) -> None:
        if self.key != pack_key(spec):
            raise ConvOperandMismatch(f"weight packed for {self.key} but the conv needs {pack_key(spec)} "
                                      "(out_channels, in_channels/groups, kernel, groups, isa, block, channelwise)")


def check_weight(w: torch.Tensor, spec: ConvSpec) -> None:
    want = spec.plain_weight_shape()
    if not isinstance(w, torch.Tensor) or w.dtype != torch.float32 or w.device.type != "cpu" or tuple(w.shape) != want:
        got = f"{w.dtype} {tuple(w.shape)} on {w.device}" if isinstance(w, torch.Tensor) else type(w).__name__
        raise ConvOperandMismatch(f"conv weight must be a float32 cpu tensor of shape {want}, got {got}")


def pack_weight(w: torch.Tensor, spec: ConvSpec) -> PackedConvWeight:
    """Packs ``w`` for ``spec``'s kernel (see the module docstring)."""
    check_weight(w, spec)
    til = choose_tiling(spec)
    if spec.flipped_weight:  # the logical weight: W[o, i, t] = w[i, o, K-1-t], group by group
        g, kernel = spec.groups, tuple(w.shape[2:])
        w = (w.detach().reshape(g, spec.cin_g, spec.cout_g, *kernel).transpose(1, 2).flip(list(range(3, w.dim() + 1)))
             .reshape(spec.out_channels, spec.cin_g, *kernel))
    w5 = w.detach().reshape(spec.out_channels, spec.cin_g, *spec.as3d("kernel"))
    if til.channelwise:
        k, c = til.group_width, torch.arange(spec.out_channels)
        rotated = w5[c // k * k + (c % k + torch.arange(k)[:, None]) % k, c % k]  # [k, C, kd, kh, kw]
        out = torch.zeros(packed_shape(spec, til))
        out[..., :spec.out_channels] = rotated.permute(2, 3, 4, 0, 1)
        return PackedConvWeight(out, *pack_key(spec))
    g, blocks, nr = spec.groups, til.blocks, til.nr
    padded = torch.zeros(g, blocks * nr, spec.cin_g, *spec.as3d("kernel"))
    padded[:, :spec.cout_g] = w5.reshape(g, spec.cout_g, spec.cin_g, *spec.as3d("kernel"))
    # [g, blocks, nr, ci, kd, kh, kw] -> [g, blocks, kd, kh, kw, ci, nr]
    data = padded.reshape(g, blocks, nr, spec.cin_g, *spec.as3d("kernel")).permute(0, 1, 4, 5, 6, 3, 2)
    return PackedConvWeight(data.reshape(packed_shape(spec, til)).contiguous(), *pack_key(spec))
