"""Kernel IR to a loaded module in one call: the target's artifact (through the
compile cache) -> ``Device.load``.

    module = compile_kernels(kernels)                              # host CPU, default cache
    module = compile_kernels(kernels, "x86", "+avx2,+fma", cache=None)
    module.kernel("fused_0")(x, out)

Every artifact tessera builds goes through :func:`cached_artifact`: fused
kernels, and the conv and int8 GEMM kernels built from a spec. One key recipe:
a hash of what defines the code (the kernel IR text, a spec), the target's key
(name, triple, CPU, features: ``CompileOptions.target``/``features``), tessera's
version and the code generator's fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache, cache_key
from tessera.runtime.device import Device
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

from . import targets

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

DEFAULT = object()
"""``cache=DEFAULT``: the cache under ``RuntimeOptions.cache_dir``."""


def cached_artifact(source: str, target_key: str, build: Callable[[], Artifact],
                    cache: CompileCache | None | object = DEFAULT, options: RuntimeOptions | None = None) -> Artifact:
    """The artifact whose code ``source`` and ``target_key`` define, from the compile
    cache (``DEFAULT``: the one of ``options``; None: none), else ``build()``'s."""
    from .codegen.fingerprint import codegen_fingerprint, tessera_version

    if cache is DEFAULT:
        cache = CompileCache.default(options)
    if cache is None:
        return build()
    if not isinstance(cache, CompileCache):
        raise TypeError(f"cache must be a CompileCache, None or DEFAULT, not {type(cache).__name__}")
    return cache.get_or_build(cache_key(source, target_key, tessera_version(), codegen_fingerprint()), build)


def compile_artifact(kernels: ModuleOp, target: str | None = None, features: str | None = None,
                     cache: CompileCache | None | object = DEFAULT, options: RuntimeOptions | None = None) -> Artifact:
    """The artifact of ``target`` (default: this host's CPU) for ``kernels``."""
    tgt = targets.get(target) if target is not None else targets.host_cpu()
    target_key, build = tgt.artifact(kernels, features)
    return cached_artifact(str(kernels), target_key, build, cache, options)


def compile_kernels(kernels: ModuleOp, target: str | None = None, features: str | None = None,
                    cache: CompileCache | None | object = DEFAULT, device: Device | str = "cpu",
                    options: RuntimeOptions | None = None) -> Module:
    """Compiles every ``tsr.kernel`` of ``kernels`` and loads them on ``device``
    (default target: the device's)."""
    options = options or RuntimeOptions()
    dev = device if isinstance(device, Device) else Device(device, options)
    if target is None:
        target = targets.for_device(dev.type).name
    return dev.load(compile_artifact(kernels, target, features, cache, options))
