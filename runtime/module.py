"""A loaded artifact: its kernels by name, on one device.

    module = Device("cpu").load(artifact)
    module.kernel("fused_0")(x, out)
"""

from __future__ import annotations

from collections.abc import Iterator

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import KernelNotFound
from tessera.runtime.kernel import Kernel


class Module:
    def __init__(self, artifact: Artifact, kernels: dict[str, Kernel], keepalive: object = None):
        self.artifact = artifact
        self._kernels = kernels
        self._keepalive = keepalive  # the loaded code; it must outlive every Kernel handed out
        for k in kernels.values():
            k._module = self  # a Kernel keeps its module (and so its code) alive

    def kernel(self, name: str) -> Kernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise KernelNotFound(f"no kernel @{name} in this module (has: {', '.join(self._kernels) or 'none'})") from None

    __getitem__ = kernel

    def __iter__(self) -> Iterator[str]:
        return iter(self._kernels)

    def __len__(self) -> int:
        return len(self._kernels)

    def __repr__(self) -> str:
        return f"Module({self.artifact.target}, kernels={list(self._kernels)})"
