"""tessera's own channels-last fp32 convolution kernels for x86 (AVX-512 and AVX2).

    from tessera.compiler.targets.x86.conv import ConvSpec, conv_channels_last, pack_weight
    spec = ConvSpec(1, 128, 128, (64, 64), (3, 3), padding=1, bias=True, activation="silu")
    pw = pack_weight(w, spec)                                    # once per weight
    y = conv_channels_last(x_cl, pw, spec, bias=b)              # channels-last, like x_cl

Modules: ``spec`` (what a kernel computes), ``isa`` (ymm/zmm paths, host
selection), ``tiling`` (register tile, tiles of a row), ``packing`` (weights
into the blocked layout, with torch), ``microkernel`` (the register tiles),
``epilogue`` (bias, residual, activation at the store), ``kernel`` (grid,
kernel ABI), ``build`` (LLVM IR / assembly / artifact), ``api``
(``conv_channels_last``). ``python -m tessera.compiler.targets.x86.conv --emit asm
--features +avx2,+fma`` prints a kernel's assembly on any host.
"""

from __future__ import annotations

from tessera.compiler.targets.x86.conv.api import conv_channels_last, load_conv, spec_for
from tessera.compiler.targets.x86.conv.build import build_conv, conv_assembly, conv_llvm_ir
from tessera.compiler.targets.x86.conv.errors import (
    ConvIsaUnavailable,
    ConvKernelError,
    ConvOperandMismatch,
    InvalidConvSpec,
    UnknownConvIsa,
)
from tessera.compiler.targets.x86.conv.isa import CONV_ISAS, can_run_conv, get_conv_isa, select_conv_isa
from tessera.compiler.targets.x86.conv.packing import PackedConvWeight, pack_weight
from tessera.compiler.targets.x86.conv.spec import ACTIVATIONS, ConvSpec

__all__ = [
    "ACTIVATIONS", "CONV_ISAS", "ConvIsaUnavailable", "ConvKernelError", "ConvOperandMismatch", "ConvSpec",
    "InvalidConvSpec", "PackedConvWeight", "UnknownConvIsa", "build_conv", "can_run_conv", "conv_assembly",
    "conv_channels_last", "conv_llvm_ir", "get_conv_isa", "load_conv", "pack_weight", "select_conv_isa", "spec_for",
]
