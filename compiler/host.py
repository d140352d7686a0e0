"""What this host can build and run, per target (``compilerctl targets``)."""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class TargetStatus:
    target: str
    toolchain: str
    """What builds this target's artifacts here, or why nothing does."""
    can_build: bool
    can_run: bool
    run_note: str


def _llvm_targets() -> set[str]:
    try:
        import llvmlite.binding as llvm

        llvm.initialize_all_targets()
        found = set()
        for triple, name in (("x86_64-unknown-linux-gnu", "x86"), ("nvptx64-nvidia-cuda", "nvptx")):
            try:
                llvm.Target.from_triple(triple)
                found.add(name)
            except RuntimeError:
                pass
        return found
    except Exception:  # noqa: BLE001 - llvmlite missing or broken: report, not crash
        return set()


def host_cpu_features() -> list[str]:
    """The vector features of this CPU worth reporting (the runtime's view of the host)."""
    try:
        from tessera.runtime.cpu import host_features

        return sorted(f for f in host_features() if f.startswith(("avx", "fma", "amx")))
    except Exception:  # noqa: BLE001 - llvmlite missing or broken: report, not crash
        return []


def ptxas_path() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ptxas",):
        if shutil.which(candidate):
            return candidate
    return None


def _cuda_run_status(cuda: bool) -> tuple[bool, str]:
    """Whether ptx kernels run here: a CUDA device torch sees and the driver API (cuda-bindings)."""
    if not cuda:
        return False, "no CUDA device"
    from tessera.runtime.cuda import unavailable_reason

    import torch

    name, (major, minor) = torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)
    reason = unavailable_reason()
    where = f"CUDA device {name} (sm_{major}{minor})"
    return (False, f"{where}, but {reason}") if reason else (True, where)


def target_statuses() -> list[TargetStatus]:
    llvm = _llvm_targets()
    x86_host = platform.machine().lower() in ("x86_64", "amd64")
    feats = host_cpu_features()
    out = [
        TargetStatus(
            "x86",
            "llvmlite (LLVM X86)" if "x86" in llvm else "llvmlite without the X86 target",
            "x86" in llvm,
            x86_host,
            f"host CPU: {', '.join(feats) or 'no AVX'}" if x86_host else f"host is {platform.machine()}",
        )
    ]
    ptxas = ptxas_path()
    try:
        import torch

        cuda = torch.cuda.is_available()
        mps = torch.backends.mps.is_available()
    except Exception:  # noqa: BLE001
        cuda = mps = False
    out.append(
        TargetStatus(
            "ptx",
            ("llvmlite (LLVM NVPTX)" if "nvptx" in llvm else "no NVPTX target")
            + (f" + {ptxas}" if ptxas else ", no ptxas (PTX only, no cubin)"),
            "nvptx" in llvm,
            *_cuda_run_status(cuda),
        )
    )
    xcrun = shutil.which("xcrun")
    out.append(
        TargetStatus(
            "metal",
            "MSL printer" + (f" + {xcrun} metal/metallib" if xcrun else ", no xcrun (MSL source only, no metallib)"),
            True,
            mps,
            "MPS device present" if mps else "no MPS device",
        )
    )
    return out
