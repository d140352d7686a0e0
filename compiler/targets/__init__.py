"""The target registry: one description per target, nothing outside it names one.

    from tessera.compiler import targets
    targets.get("x86")            # the x86 description (targets/x86)
    targets.for_device("cuda")    # the target of CUDA tensors: ptx
    targets.host_cpu()            # this host's CPU target: x86 or aarch64
    targets.names()               # ("aarch64", "metal", "ptx", "x86")

A new target is a folder beside these with a :class:`~.base.Target` subclass,
and one line below. Importing the registry registers each target's models
with the graph passes (``passes.target_models``).
"""

from __future__ import annotations

from tessera.passes.target_models import register_target_models

from ..codegen.errors import UnknownTarget
from .aarch64 import AArch64
from .base import CpuTarget, GpuTarget, Target, TargetStatus
from .metal import Metal
from .nvptx import Nvptx
from .x86 import X86

_REGISTRY: dict[str, Target] = {}


def register(target: Target) -> Target:
    _REGISTRY[target.name] = target
    register_target_models(target.name, target.models)
    return target


def get(name: str) -> Target:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownTarget(f"unknown target {name!r}; known: {', '.join(names())}") from None


def names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def all_targets() -> tuple[Target, ...]:
    return tuple(_REGISTRY[n] for n in names())


def host_cpu() -> Target:
    """The CPU target whose objects this host runs (x86 where none does: assembly still builds)."""
    return next((t for t in all_targets() if isinstance(t, CpuTarget) and t.runs_here()), _REGISTRY["x86"])


def for_device(device_type: str) -> Target:
    """The target of tensors on ``device_type`` (``cpu``: this host's CPU target)."""
    if device_type == "cpu":
        return host_cpu()
    found = [t for t in all_targets() if t.device == device_type]
    if not found:
        raise UnknownTarget(f"no target runs on {device_type!r} tensors; targets: {', '.join(names())}")
    return found[0]


def codegen_target(name: str, features: str | None = None, cpu: str | None = None):
    """The LLVM emitter's knobs of target ``name`` (``None`` features: the host's / default)."""
    return get(name).codegen(features, cpu)


for _target in (X86(), AArch64(), Nvptx(), Metal()):  # the registry: one entry per target
    register(_target)

__all__ = ["CpuTarget", "GpuTarget", "Target", "TargetStatus", "all_targets", "codegen_target", "for_device", "get",
           "host_cpu", "names", "register"]
