"""One interface for every device: ``Device(kind).load(artifact) -> Module``.

    Device("cpu").load(x86_artifact).kernel("fused_0")(x, out)
    Device("cuda").load(ptx_artifact).kernel("fused_0")(x_cuda, out_cuda)
    Device("mps").load(msl_artifact).kernel("fused_0")(x_mps, out_mps)

Each device kind is a row of :data:`BACKENDS`: its loader, ``"module:function"``
with ``function(artifact, device, options) -> Module``; the loader's module may
define ``unavailable_reason(device) -> str | None`` (why it cannot run here).
A new device is one row; its module is imported only when that device is used:

    "mps": Backend("tessera.runtime.mps:load"),

Which target builds a device's artifacts is the compiler's knowledge (its
target registry), not the runtime's.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import torch

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import UnsupportedDevice
from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

KNOWN = ("cpu", "cuda", "mps")


@dataclass(frozen=True)
class Backend:
    loader: str | None
    """``"module:function"`` that loads an artifact (None: kernels cannot run on this device yet)."""

    def _loader(self) -> tuple[str, str]:
        if self.loader is None:
            raise UnsupportedDevice("this device has no loader")
        module, _, function = self.loader.partition(":")
        return module, function

    def module(self):
        return importlib.import_module(self._loader()[0])

    def load(self, artifact: Artifact, device: torch.device, options: RuntimeOptions) -> Module:
        return getattr(self.module(), self._loader()[1])(artifact, device, options)


BACKENDS: dict[str, Backend] = {
    "cpu": Backend("tessera.runtime.device:load_cpu"),
    "cuda": Backend("tessera.runtime.cuda:load"),
    "mps": Backend("tessera.runtime.mps:load"),
}


class Device:
    def __init__(self, kind: str | torch.device = "cpu", options: RuntimeOptions | None = None):
        try:
            self.torch_device = torch.device(kind)
        except RuntimeError as err:
            raise UnsupportedDevice(f"unknown device {kind!r}: {err}") from None
        self.type = self.torch_device.type
        if self.type not in KNOWN:
            raise UnsupportedDevice(f"unknown device {kind!r}; tessera knows {', '.join(KNOWN)}")
        self.backend = BACKENDS[self.type]
        if self.backend.loader is None:
            raise UnsupportedDevice(f"device {self.type!r} is not supported yet: kernels run on "
                                    f"{', '.join(k for k, b in BACKENDS.items() if b.loader)}")
        check = getattr(self.backend.module(), "unavailable_reason", None)
        reason = check(self.torch_device) if check is not None else None
        if reason:
            raise UnsupportedDevice(f"device {self.type!r} cannot run kernels here: {reason}")
        self.options = options or RuntimeOptions()

    def __repr__(self) -> str:
        return f"Device({str(self.torch_device)!r})"

    def load(self, artifact: Artifact) -> Module:
        return self.backend.load(artifact, self.torch_device, self.options)


def load_cpu(artifact: Artifact, device: torch.device, options: RuntimeOptions) -> Module:
    """The cpu loader: an object linked into this process, kernels run on OpenMP's threads."""
    from tessera.runtime import cpu

    code = cpu.LoadedObject(artifact)
    launch = cpu.launchers(code, artifact.signatures, options.num_threads)
    kernels = {sig.name: Kernel(sig, device, launch[sig.name], options) for sig in artifact.signatures}
    return Module(artifact, kernels, keepalive=code)
