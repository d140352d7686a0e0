"""The Apple GPU target: MSL printed from the kernel IR (``msl/``), no ``llvm``
stage; ``.metallib`` through ``xcrun metal``/``metallib`` on macOS; loaded by
``runtime/mps.py`` (the Metal driver compiles MSL source at load time).

    compilerctl translate k.mlir --target metal --emit msl
"""

from __future__ import annotations

from collections.abc import Callable

from tessera.passes.target_models import TargetModels

from ...stage_io import CompileOptions, StageOutput
from ..base import GpuTarget, Stage, TargetStatus


def msl_stage(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    from .msl import print_msl

    module = print_msl(prev.value.kernels)
    return StageOutput((prev.value, module), module.source, "metal")


def metallib_stage(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    from tessera.runtime.cache import CompileCache

    from .msl.metallib import compile_metallib

    _, module = prev.value
    artifact = compile_metallib(module.source, module.signatures, CompileCache.default())
    names = ", ".join(k.name for k in module.kernels)
    return StageOutput((artifact, module), f"// metallib, {len(artifact.data)} bytes; kernels: {names}\n", "metallib",
                       artifact.data)


class Metal(GpuTarget):
    name = "metal"
    device = "mps"
    half_compute = "native"
    default_stage = "msl"

    def models(self) -> TargetModels:
        from .conv_layouts import CONV_LAYOUTS

        return TargetModels(conv_layouts=CONV_LAYOUTS)

    def stages(self) -> dict[str, Stage]:
        return {"msl": msl_stage, "metallib": metallib_stage}  # metallib: needs xcrun

    def cache_key(self, features: str | None = None) -> str:
        from .msl import MSL_VERSION

        return f"metal|{MSL_VERSION}"

    def artifact(self, kernels, features: str | None = None) -> tuple[str, Callable]:
        """MSL source: the Metal driver compiles it at load time."""
        from .msl import msl_artifact

        return self.cache_key(features), lambda: msl_artifact(kernels)

    def status(self) -> TargetStatus:
        import shutil

        try:
            import torch

            mps = torch.backends.mps.is_available()
        except Exception:  # noqa: BLE001
            mps = False
        xcrun = shutil.which("xcrun")
        return TargetStatus(self.name, "MSL printer" + (f" + {xcrun} metal/metallib" if xcrun else
                                                         ", no xcrun (MSL source only, no metallib)"),
                            True, mps, "MPS device present" if mps else "no MPS device")
