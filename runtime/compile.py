"""Kernel IR to a loaded module in one call: emitter -> object (through the
compile cache) -> ``Device.load``.

    module = compile_kernels(kernels)                              # host CPU, default cache
    module = compile_kernels(kernels, features="+avx2,+fma", cache=None)
    module.kernel("fused_0")(x, out)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache, cache_key
from tessera.runtime.device import Device
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

DEFAULT = object()
"""``cache=DEFAULT``: the cache under ``RuntimeOptions.cache_dir``."""


def compile_artifact(kernels: ModuleOp, target: str = "x86", features: str | None = None,
                     cache: CompileCache | None | object = DEFAULT, options: RuntimeOptions | None = None) -> Artifact:
    from tessera.compiler.codegen.fingerprint import codegen_fingerprint, tessera_version

    if target == "metal":  # MSL source, compiled by the Metal driver at load time
        from tessera.compiler.codegen.msl import MSL_VERSION, msl_artifact

        target_key, build = f"metal|{MSL_VERSION}", lambda: msl_artifact(kernels)
    else:
        from tessera.compiler.codegen import build_artifact, get_target

        tgt = get_target(target, features=features)
        target_key, build = tgt.cache_key(), lambda: build_artifact(kernels, tgt)
    if cache is DEFAULT:
        root = (options or RuntimeOptions()).cache_dir
        cache = CompileCache(root) if root is not None else None
    if cache is None:
        return build()
    if not isinstance(cache, CompileCache):
        raise TypeError(f"cache must be a CompileCache, None or DEFAULT, not {type(cache).__name__}")
    return cache.get_or_build(cache_key(str(kernels), target_key, tessera_version(), codegen_fingerprint()), build)


def compile_kernels(kernels: ModuleOp, target: str = "x86", features: str | None = None,
                    cache: CompileCache | None | object = DEFAULT, device: Device | str = "cpu",
                    options: RuntimeOptions | None = None) -> Module:
    """Compiles every ``tsr.kernel`` of ``kernels`` and loads them on ``device``."""
    options = options or RuntimeOptions()
    dev = device if isinstance(device, Device) else Device(device, options)
    return dev.load(compile_artifact(kernels, target, features, cache, options))
