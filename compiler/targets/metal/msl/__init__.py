"""The Metal target: kernel IR printed as Metal Shading Language, packaged to a
``.metallib`` with Apple's toolchain where it exists.

    from tessera.compiler.targets.metal.msl import print_msl, msl_artifact
    module = print_msl(kernels)            # MslModule: .source (MSL text), .kernels (launch info)
    artifact = msl_artifact(kernels)       # Artifact(target="metal", kind="msl", data=source bytes)

Apple's AIR is undocumented, so (like Inductor's MPS backend and Triton's Apple
work) tessera prints MSL rather than going through LLVM.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tessera.compiler.targets.metal.msl.printer import MAX_BUFFERS, MslKernel, MslModule, MslParam, print_msl
from tessera.runtime.artifact import Artifact

MSL_VERSION = "metal3.1"
"""The language version the printed source needs (``bfloat`` arrived in MSL 3.1, macOS 14)."""


def msl_source(kernels: ModuleOp) -> str:
    return print_msl(kernels).source


def msl_artifact(kernels: ModuleOp) -> Artifact:
    """The MSL source of every kernel as an artifact (``kind="msl"``) that
    ``runtime.mps`` compiles at load time with ``torch.mps.compile_shader``."""
    module = print_msl(kernels)
    return Artifact(target="metal", kind="msl", data=module.source.encode("ascii"), signatures=module.signatures,
                    target_key=f"metal|{MSL_VERSION}")


__all__ = ["MAX_BUFFERS", "MSL_VERSION", "MslKernel", "MslModule", "MslParam", "msl_artifact", "msl_source", "print_msl"]
