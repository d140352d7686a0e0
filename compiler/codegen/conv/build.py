"""From a :class:`ConvSpec` to LLVM IR, assembly and a loadable artifact.

    art = build_conv(ConvSpec(1, 128, 128, (64, 64), (3, 3), padding=1))
    Device("cpu").load(art).kernel(art.signatures[0].name)(x_cl, packed.data, out)
    print(conv_assembly(spec, "+avx2,+fma"))     # any host: nothing runs

``features=None`` builds for the spec's path's portable feature set; a given
feature string must enable that path (``+avx512f``, or ``+avx2,+fma``).
"""

from __future__ import annotations

from tessera.compiler.codegen.conv.isa import check_features, get_conv_isa
from tessera.compiler.codegen.conv.kernel import conv_module, signature
from tessera.compiler.codegen.conv.spec import ConvSpec
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.codegen.x86 import X86Target
from tessera.runtime.artifact import Artifact


def conv_target(isa: str, features: str | None = None, cpu: str | None = None) -> X86Target:
    target = X86Target(features=features or get_conv_isa(isa).features, cpu=cpu or "")
    check_features(isa, target.features)
    return target


def conv_llvm_ir(spec: ConvSpec, features: str | None = None, cpu: str | None = None, optimized: bool = False) -> str:
    target = conv_target(spec.isa, features, cpu)
    text = str(conv_module(spec, target))
    return str(optimize(text, target)) if optimized else text


def conv_assembly(spec: ConvSpec, features: str | None = None, cpu: str | None = None) -> str:
    """x86 assembly with LLVM's loop comments; works on any host."""
    target = conv_target(spec.isa, features, cpu)
    module = optimize(str(conv_module(spec, target)), target)
    target.target_machine.set_asm_verbosity(True)  # this target object is ours alone
    return target.emit_assembly(module)


def build_conv(spec: ConvSpec, features: str | None = None, cpu: str | None = None) -> Artifact:
    """An x86 object holding the kernel ``spec.kernel_name`` and its signature."""
    target = conv_target(spec.isa, features, cpu)
    data = target.emit_artifact(optimize(str(conv_module(spec, target)), target))
    return Artifact(target=target.name, kind=target.artifact_kind, data=data, signatures=(signature(spec),),
                    target_key=target.cache_key())
