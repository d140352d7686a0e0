"""One interface for every device: ``Device(kind).load(artifact) -> Module``.

    Device("cpu").load(artifact).kernel("fused_0")(x, out)
    Device("cuda")   # UnsupportedDevice for now; the interface will not change
"""

from __future__ import annotations

import torch

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import UnsupportedDevice
from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

KNOWN = ("cpu", "cuda", "mps")


class Device:
    def __init__(self, kind: str | torch.device = "cpu", options: RuntimeOptions | None = None):
        self.torch_device = torch.device(kind)
        self.type = self.torch_device.type
        if self.type not in KNOWN:
            raise UnsupportedDevice(f"unknown device {kind!r}; tessera knows {', '.join(KNOWN)}")
        if self.type != "cpu":
            raise UnsupportedDevice(f"device {self.type!r} is not supported yet: kernels run on 'cpu' only")
        self.options = options or RuntimeOptions()

    def __repr__(self) -> str:
        return f"Device({self.type!r})"

    @property
    def target(self) -> str:
        """The code generation target whose artifacts this device loads."""
        return "x86"

    def load(self, artifact: Artifact) -> Module:
        from tessera.runtime import cpu

        code = cpu.LoadedObject(artifact)
        kernels = {}
        for sig in artifact.signatures:
            fn = code.function(sig.name, len(sig.args))
            total, threads = sig.grid_size, self.options.num_threads

            def launcher(pointers, chunks, fn=fn, total=total, threads=threads):
                cpu.run_chunks(fn, pointers, total, chunks, threads)

            kernels[sig.name] = Kernel(sig, self.torch_device, launcher, self.options)
        return Module(artifact, kernels, keepalive=code)
