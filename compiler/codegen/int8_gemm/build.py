"""From an :class:`Int8GemmSpec` to LLVM IR, assembly and a loadable artifact.

    art = build_int8_gemm(Int8GemmSpec(64, 4096, 4096, isa="avx512vnni"))
    Device("cpu").load(art).kernel(art.signatures[0].name)(a, packed.data, out)
    print(int8_gemm_assembly(Int8GemmSpec(13, 70, 37, isa="avx2")))   # on any host

``features=None`` builds for the path's own feature set (``IsaPath.features``:
code that runs on every CPU with the path); a given feature string must
enable the path's instructions.
"""

from __future__ import annotations

from tessera.compiler.codegen.int8_gemm.gemm import gemm_module, signature
from tessera.compiler.codegen.int8_gemm.isa import check_features, get_isa
from tessera.compiler.codegen.int8_gemm.spec import Int8GemmSpec
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.codegen.x86 import X86Target
from tessera.runtime.artifact import Artifact


def gemm_target(isa: str, features: str | None = None, cpu: str | None = None) -> X86Target:
    """The x86 target for ``isa``: its portable features unless ``features`` is given."""
    target = X86Target(features=features or get_isa(isa).features, cpu=cpu or "")
    check_features(isa, target.features)
    return target


def int8_gemm_llvm_ir(spec: Int8GemmSpec, features: str | None = None, cpu: str | None = None, optimized: bool = False) -> str:
    target = gemm_target(spec.isa, features, cpu)
    text = str(gemm_module(spec, target))
    return str(optimize(text, target)) if optimized else text


def int8_gemm_assembly(spec: Int8GemmSpec, features: str | None = None, cpu: str | None = None) -> str:
    """x86 assembly of the kernel, with LLVM's loop comments (``# =>This Inner
    Loop Header: Depth=2``); works on any host (nothing is run)."""
    target = gemm_target(spec.isa, features, cpu)
    module = optimize(str(gemm_module(spec, target)), target)
    target.target_machine.set_asm_verbosity(True)  # this target object is ours alone
    return target.emit_assembly(module)


def build_int8_gemm(spec: Int8GemmSpec, features: str | None = None, cpu: str | None = None) -> Artifact:
    """An x86 object holding the kernel ``spec.kernel_name`` and its signature."""
    target = gemm_target(spec.isa, features, cpu)
    data = target.emit_artifact(optimize(str(gemm_module(spec, target)), target))
    return Artifact(target=target.name, kind=target.artifact_kind, data=data, signatures=(signature(spec),),
                    target_key=target.cache_key())
