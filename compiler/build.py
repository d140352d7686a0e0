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

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache, cache_key
from tessera.runtime.device import Device
from tessera.runtime.kernel import Kernel
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


LOADED_KERNELS = 256
"""Kernels built from a spec that :func:`cpu_kernel` keeps loaded (least recently used dropped)."""

_loaded: OrderedDict[tuple[str, str, int], Kernel] = OrderedDict()


def cpu_kernel(name: str, source: str, target_key: Callable[[], str], build: Callable[[], Artifact]) -> Kernel:
    """Kernel ``name`` of the CPU artifact that ``source`` defines (a spec and the
    features it is built for) and ``target_key()`` keys (:func:`cached_artifact`),
    loaded once per process and thread count: how the kernels tessera builds from a
    spec (convs, int8 GEMMs, their packing) are had. A loaded kernel is found by
    ``source`` alone (``target_key`` and ``build`` run on a miss only: per-call paths ask).

        cpu_kernel(spec.kernel_name, f"{spec!r} {features}", lambda: conv_target(spec.isa, features).cache_key(),
                   lambda: build_conv(spec, features))
    """
    import torch

    key = (name, source, torch.get_num_threads())
    kernel = _loaded.get(key)
    if kernel is None:
        kernel = _loaded[key] = Device("cpu").load(cached_artifact(source, target_key(), build)).kernel(name)
        if len(_loaded) > LOADED_KERNELS:
            _loaded.popitem(last=False)
    else:
        _loaded.move_to_end(key)
    return kernel


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
