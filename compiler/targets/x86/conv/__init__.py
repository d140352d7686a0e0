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

from tessera.compiler.lazy_exports import lazy_exports

_EXPORTS = {
    "conv_channels_last": "api", "load_conv": "api", "spec_for": "api",
    "build_conv": "build", "conv_assembly": "build", "conv_llvm_ir": "build",
    "ConvIsaUnavailable": "errors", "ConvKernelError": "errors", "ConvOperandMismatch": "errors",
    "InvalidConvSpec": "errors", "UnknownConvIsa": "errors",
    "CONV_ISAS": "isa", "can_run_conv": "isa", "get_conv_isa": "isa", "select_conv_isa": "isa",
    "PackedConvWeight": "packing", "pack_weight": "packing", "ACTIVATIONS": "spec", "ConvSpec": "spec",
}
"""Names imported on first use, so that ``conv.isa`` & co. load without torch (``api`` and
``packing`` need it; the passes' ``conv_choice`` does not)."""


__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
