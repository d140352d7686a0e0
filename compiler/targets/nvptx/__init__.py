"""The NVIDIA GPU target: PTX from LLVM's NVPTX backend, cubins from ``ptxas``,
loaded through the CUDA driver (``runtime/cuda.py``).

    compilerctl translate k.mlir --target ptx --emit ptx --features sm_90
"""

from __future__ import annotations

from tessera.passes.target_models import TargetModels

from ...stage_io import CompileOptions, StageOutput
from ..base import GpuTarget, Stage, TargetStatus
from .codegen import BLOCK_SIZE, NVPTX_TRIPLE, NVPTXTarget


def cubin_stage(prev: StageOutput, opts: CompileOptions) -> StageOutput:
    from .ptxas import assemble

    _, codegen, module = prev.value
    data = assemble(prev.text, codegen.cpu)
    names = ", ".join(f.name for f in module.functions if not f.is_declaration)
    return StageOutput(prev.value, f"// cubin for {codegen.cpu}, {len(data)} bytes; kernels: {names}\n", "cubin", data)


class Nvptx(GpuTarget):
    name = "ptx"
    device = "cuda"
    default_stage = "ptx"
    artifact_stage = "ptx"  # PTX text: the CUDA driver compiles it for the device it runs on
    cooperative_threads = BLOCK_SIZE  # a block per point of a long reduction (shared memory, bar.sync)

    def models(self) -> TargetModels:
        from .conv_layouts import CONV_LAYOUTS

        return TargetModels(conv_layouts=CONV_LAYOUTS)

    def stages(self) -> dict[str, Stage]:
        from ..llvm_stages import assembly_stage, llvm_stage

        return {"llvm": llvm_stage, "ptx": assembly_stage("ptx"), "cubin": cubin_stage}  # cubin: needs ptxas

    def device_features(self, device) -> str | None:
        """The sm of the CUDA device the kernels will run on."""
        from tessera.runtime.cuda import device_sm

        return device_sm(device)

    def codegen(self, features: str | None = None, cpu: str | None = None) -> NVPTXTarget:
        return NVPTXTarget(features=features, cpu=cpu)

    def status(self) -> TargetStatus:
        from ..llvm_stages import llvm_has
        from .ptxas import ptxas_path

        has, ptxas = llvm_has(NVPTX_TRIPLE), ptxas_path()
        toolchain = ("llvmlite (LLVM NVPTX)" if has else "no NVPTX target") + (
            f" + {ptxas}" if ptxas else ", no ptxas (PTX only, no cubin)")
        return TargetStatus(self.name, toolchain, has, *_cuda_run_status())


def _cuda_run_status() -> tuple[bool, str]:
    """Whether ptx kernels run here: a CUDA device torch sees and the driver API (cuda-bindings)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return False, "no CUDA device"
        from tessera.runtime.cuda import unavailable_reason

        name, (major, minor) = torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)
        reason = unavailable_reason()
    except Exception as e:  # noqa: BLE001 - a broken CUDA setup is reported, not raised
        return False, f"CUDA unusable: {e}"
    where = f"CUDA device {name} (sm_{major}{minor})"
    return (False, f"{where}, but {reason}") if reason else (True, where)
