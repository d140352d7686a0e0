"""Loading PTX/cubin on an NVIDIA GPU and launching it on torch's current stream.

    module = Device("cuda").load(artifact)         # cuModuleLoadData (the driver JITs PTX)
    module.kernel("fused_0")(x, out)               # cuLaunchKernel, tensors' data_ptr()s

Through the CUDA driver API of ``cuda-bindings`` (``pip install tessera[gpu]``),
imported only here and only when a CUDA device is used. Modules are loaded
into the device's primary context, the one torch uses, so pointers from
``tensor.data_ptr()`` are valid in it. Launch shape (kernel ABI, docs/kernel-ir.md):
one thread per grid point, ``ceil(prod(grid) / block)`` blocks of ``block``
threads, where ``block`` is the kernel's ``.maxntid`` as the driver reports it
(``CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK``: 256 from the NVPTX target, less
if the kernel's registers do not allow it); a cooperative kernel (its signature's
``threads_per_point``, a block per point) runs ``prod(grid)`` blocks.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence

import torch

from tessera.runtime.artifact import Artifact
from tessera.runtime.errors import LoadError, SignatureMismatch, UnsupportedDevice
from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module
from tessera.runtime.options import RuntimeOptions

MAX_GRID_X = 2**31 - 1
GPU_EXTRA = "pip install 'tessera[gpu]' (cuda-bindings)"


class CudaError(LoadError):
    """A CUDA driver call that failed; the message names the call and the driver's error."""


@functools.cache
def _driver():
    """``cuda.bindings.driver``, initialized; raises UnsupportedDevice with the reason it cannot be."""
    try:
        from cuda.bindings import driver
    except ImportError as err:
        raise UnsupportedDevice(f"device 'cuda' needs cuda-bindings: {GPU_EXTRA} ({err})") from None
    try:
        (res,) = driver.cuInit(0)
    except Exception as err:  # noqa: BLE001 - no driver library: cuda-bindings raises its own error types
        raise UnsupportedDevice(f"device 'cuda': the CUDA driver cannot be loaded: {err}") from None
    if res != driver.CUresult.CUDA_SUCCESS:
        raise UnsupportedDevice(f"device 'cuda': cuInit failed: {_name(driver, res)}")
    return driver


def _name(driver, res) -> str:
    try:
        err, text = driver.cuGetErrorString(res)
        return f"{res.name}: {text.decode()}" if err == driver.CUresult.CUDA_SUCCESS else str(res)
    except Exception:  # noqa: BLE001
        return str(res)


def _check(driver, call: str, out):
    """``out`` of a driver call (``(CUresult, *values)``): the values, or CudaError."""
    res, *values = out
    if res != driver.CUresult.CUDA_SUCCESS:
        raise CudaError(f"{call} failed: {_name(driver, res)}")
    return values[0] if len(values) == 1 else tuple(values)


def unavailable_reason(device: torch.device | None = None) -> str | None:
    """Why CUDA kernels cannot run here (None when they can)."""
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    index = 0 if device is None or device.index is None else device.index
    if index >= torch.cuda.device_count():
        return f"there is no CUDA device {index} (torch sees {torch.cuda.device_count()})"
    try:
        _driver()
    except UnsupportedDevice as err:
        return err.message
    return None


def device_sm(device: torch.device) -> str:
    """``"sm_90"`` for an H100: what to build PTX for."""
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


class LoadedModule:
    """A CUmodule in the primary context of one device; unloaded when collected."""

    def __init__(self, artifact: Artifact, device: torch.device):
        if artifact.kind not in ("ptx", "cubin"):
            raise LoadError(f"the cuda device loads ptx/cubin artifacts, not {artifact.target}/{artifact.kind}")
        self.driver = driver = _driver()
        self.index = torch.cuda.current_device() if device.index is None else device.index
        built_for = _built_for_sm(artifact)
        have = torch.cuda.get_device_capability(self.index)
        if built_for is not None and built_for > have[0] * 10 + have[1]:
            raise LoadError(f"the code was built for sm_{built_for}; CUDA device {self.index} is sm_{have[0]}{have[1]}")
        torch.cuda.init()  # torch's primary context exists before ours
        dev = _check(driver, "cuDeviceGet", driver.cuDeviceGet(self.index))
        self.context = _check(driver, "cuDevicePrimaryCtxRetain", driver.cuDevicePrimaryCtxRetain(dev))
        self._dev = dev
        self.make_current()
        image = ctypes.create_string_buffer(artifact.data)  # NUL-terminated, as PTX must be; cubin ignores it
        self.module = _check(driver, "cuModuleLoadData", driver.cuModuleLoadData(ctypes.addressof(image)))

    def make_current(self) -> None:
        driver = self.driver
        current = _check(driver, "cuCtxGetCurrent", driver.cuCtxGetCurrent())
        if int(current) != int(self.context):
            _check(driver, "cuCtxSetCurrent", driver.cuCtxSetCurrent(self.context))

    def function(self, name: str):
        return _check(self.driver, "cuModuleGetFunction", self.driver.cuModuleGetFunction(self.module, name.encode()))

    def block_size(self, fn) -> int:
        attr = self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        return int(_check(self.driver, "cuFuncGetAttribute", self.driver.cuFuncGetAttribute(attr, fn)))

    def launch(self, fn, block: int, total: int, pointers: Sequence[int]) -> None:
        if total == 0:
            return
        blocks = -(-total // block)
        if blocks > MAX_GRID_X:
            raise LoadError(f"a grid of {total} points needs {blocks} blocks, more than CUDA allows ({MAX_GRID_X})")
        self.make_current()
        args = [p if isinstance(p, ctypes.c_int64) else ctypes.c_void_p(p) for p in pointers]
        params = (ctypes.c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
        stream = self.driver.CUstream(torch.cuda.current_stream(self.index).cuda_stream)
        _check(self.driver, "cuLaunchKernel", self.driver.cuLaunchKernel(
            fn, blocks, 1, 1, block, 1, 1, 0, stream, ctypes.addressof(params), 0))

    def __del__(self) -> None:
        try:
            if getattr(self, "module", None) is not None:
                self.driver.cuModuleUnload(self.module)
            if getattr(self, "context", None) is not None:
                self.driver.cuDevicePrimaryCtxRelease(self._dev)
        except Exception:  # noqa: BLE001 - interpreter shutdown: the driver may be gone
            pass


def _built_for_sm(artifact: Artifact) -> int | None:
    """The sm in the artifact's target key (``ptx|nvptx64-nvidia-cuda|sm_90|...``)."""
    parts = artifact.target_key.split("|")
    if len(parts) > 2 and parts[2].startswith("sm_"):
        digits = "".join(ch for ch in parts[2][3:] if ch.isdigit())
        return int(digits) if digits else None
    return None


class CudaKernel(Kernel):
    """A :class:`Kernel` that also checks that every tensor is on its device (index included)."""

    def dims_arguments(self, dims: list[int]) -> tuple[list, object]:
        """A PTX kernel takes its dims as ``i64`` parameters after the buffers."""
        return [ctypes.c_int64(d) for d in dims], None

    def check(self, tensors: Sequence[torch.Tensor]) -> None:
        super().check(tensors)
        for i, t in enumerate(tensors):
            if t.device.index != self.device.index:
                raise SignatureMismatch(f"kernel @{self.name} argument #{i}: tensor is on {t.device}, the kernel runs on {self.device}")


def load(artifact: Artifact, device: torch.device, options: RuntimeOptions | None = None) -> Module:
    """``artifact``'s kernels on the CUDA ``device``."""
    options = options or RuntimeOptions()
    code = LoadedModule(artifact, device)
    device = torch.device("cuda", code.index)
    kernels = {}
    for sig in artifact.signatures:
        fn = code.function(sig.name)
        block, threads = code.block_size(fn), sig.threads_per_point
        if threads > 1 and block != threads:  # a block per point: its lanes meet at barriers
            raise LoadError(f"kernel @{sig.name} computes a point with {threads} threads, but the device "
                            f"runs it in blocks of {block}")

        def launcher(pointers, _chunks, total, fn=fn, block=block, threads=threads):
            code.launch(fn, block, total * threads, pointers)

        kernels[sig.name] = CudaKernel(sig, device, launcher, options)
    return Module(artifact, kernels, keepalive=code)
