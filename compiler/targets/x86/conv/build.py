"""From a :class:`ConvSpec` to LLVM IR, assembly and a loadable artifact.

    art = build_conv(ConvSpec(1, 128, 128, (64, 64), (3, 3), padding=1))
    Device("cpu").load(art).kernel(art.signatures[0].name)(x_cl, packed.data, out)
    print(conv_assembly(spec, "+avx2,+fma"))     # any host: nothing runs

``features=None`` builds for the spec's path's portable feature set; a given
feature string must enable that path (``+avx512f``, or ``+avx2,+fma``).
"""

from __future__ import annotations

from tessera.compiler.codegen.kernel_family import KernelFamily
from tessera.compiler.targets.x86.conv.isa import check_features, get_conv_isa
from tessera.compiler.targets.x86.conv.kernel import conv_module, signature

CONV = KernelFamily(isa_features=lambda isa: get_conv_isa(isa).features, check_features=check_features,
                    module=conv_module, signature=signature)

conv_target = CONV.target
conv_llvm_ir = CONV.llvm_ir
conv_assembly = CONV.assembly
build_conv = CONV.artifact
