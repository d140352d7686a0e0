"""Shared helpers of tessera's Python tests: loading the example models,
random inputs shaped like an FX graph's placeholders, and comparisons with
dtype-appropriate tolerances."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp, TensorType

from tessera.compiler.targets.x86.conv.isa import can_run_conv
from tessera.dialects.tsr import LayoutAttr

# Each test session compiles into a compile cache of its own (kernels and graphs, see
# runtime/cache.py), so that no entry of an earlier run answers for the code under test.
_CACHE_DIR = tempfile.mkdtemp(prefix="tessera-test-cache-")
os.environ["TESSERA_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)

# Dynamo's structured trace logs at DEBUG by the thousand; keep failures readable.
logging.getLogger("torch.__trace").setLevel(logging.INFO)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
VENV_BIN = Path(sys.executable).parent

# Every example MODEL.py, and which ones are convolutional (their forward
# graphs must import without any tsr.aten_call).
EXAMPLE_NAMES = ("resnet_block", "video_vae_block", "vae2d_block", "unet_block", "mobilenet_block", "mlp", "int8_linear")
CONV_EXAMPLES = ("resnet_block", "video_vae_block", "vae2d_block", "unet_block", "mobilenet_block")
# Examples that have a backward graph worth capturing (int8 has no gradient path).
TRAINABLE = ("resnet_block", "video_vae_block", "vae2d_block", "unet_block", "mlp")


def load_example_module(name: str) -> ModuleType:
    """``examples/<name>.py`` as a Python module (not through ``sys.path``)."""
    path = EXAMPLES / f"{name}.py"
    mod_name = f"tessera_test_example_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    return module


def example(name: str, variant: str = "example"):
    """``(model, args)`` of an example (``variant`` names another factory)."""
    return getattr(load_example_module(name), variant)()


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts (and leaves) Dynamo with empty caches."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


# -- random inputs ---------------------------------------------------------------------
def _counting(monkeypatch, cls, counted) -> dict:
    """Counts how often instances of ``cls`` (a ``weight_cache`` class) compute
    their value; ``counted(instance)`` picks which instances count."""
    count = {"n": 0}
    original = cls.__call__

    def call(self, *tensors):
        before = self.packs
        out = original(self, *tensors)
        if counted(self):
            count["n"] += self.packs - before
        return out

    monkeypatch.setattr(cls, "__call__", call)
    return count


@pytest.fixture
def winograd_launches(monkeypatch) -> list[int]:
    """The ``m`` of each Winograd conv launched (``WinogradConv.launch_trusted``), in order."""
    from tessera.compiler.targets.x86.conv.winograd import WinogradConv

    launches: list[int] = []
    original = WinogradConv.launch_trusted

    def launch(self, tensors):
        launches.append(self.ws.m)
        return original(self, tensors)

    monkeypatch.setattr(WinogradConv, "launch_trusted", launch)
    return launches


@pytest.fixture
def pack_count(monkeypatch):
    """``{"n": ...}``: the weight packings of every ``PackedWeight`` (conv and int8 GEMM weights)."""
    from tessera.compiler import weight_cache

    return _counting(monkeypatch, weight_cache.PackedWeight, lambda _: True)


@pytest.fixture
def prepare_count(monkeypatch):
    """``{"n": ...}``: how often a host program prepared weights from parameters
    (``weight_preparation``), packings not counted."""
    from tessera.compiler import weight_cache

    return _counting(monkeypatch, weight_cache.PerVersion, lambda c: type(c) is weight_cache.PerVersion)


def random_tensor(shape: Sequence[int], dtype: torch.dtype, strides: Sequence[int] | None = None,
                  gen: torch.Generator | None = None, positive: bool = False) -> torch.Tensor:
    """A random (never all-zero) tensor of ``shape``/``dtype`` with ``strides``.

    Floats are normal, or uniform in [0.5, 1.5] with ``positive`` (for values
    such as running variances that feed a square root)."""
    shape = tuple(int(s) for s in shape)
    if dtype.is_floating_point:
        if positive:
            data = torch.rand(shape, generator=gen) + 0.5
        else:
            data = torch.randn(shape, generator=gen)
    elif dtype == torch.bool:
        data = torch.rand(shape, generator=gen) > 0.5
    elif dtype == torch.uint8:
        data = torch.randint(0, 256, shape, generator=gen)
    elif dtype == torch.int8:
        data = torch.randint(-128, 128, shape, generator=gen)
    else:
        data = torch.randint(-100, 100, shape, generator=gen)
    data = data.to(dtype)
    if strides is None:
        return data
    out = torch.empty_strided(shape, tuple(strides), dtype=dtype)
    out.copy_(data)
    return out


def placeholder_inputs(gm: torch.fx.GraphModule, seed: int = 0) -> list[torch.Tensor]:
    """Random inputs for ``gm``: each placeholder's shape, dtype and strides.

    Rank-1 float placeholders (biases, norm parameters, running statistics,
    scales) are positive so that a running variance never makes a NaN."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta["val"]
        out.append(random_tensor(val.shape, val.dtype, val.stride(), gen, positive=val.dim() <= 1))
    return out


# -- comparisons -------------------------------------------------------------------------
def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str = "", rtol: float = 1e-4) -> None:
    """Equal values: exact for integer/bool tensors, ``rtol`` (relative to the
    largest magnitude of ``expected``) for floating ones."""
    assert isinstance(actual, torch.Tensor), f"{what}: got {type(actual).__name__}, not a tensor"
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if not expected.dtype.is_floating_point:
        assert torch.equal(actual, expected), f"{what}: integer values differ"
        return
    assert torch.isfinite(expected).all(), f"{what}: reference has non-finite values"
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * scale, msg=lambda m: f"{what}: {m}")


def assert_same_strides(actual: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    """Same strides on every dim of size > 1 (size-1 dims carry no layout)."""
    diff = [(d, a, e) for d, (a, e, n) in enumerate(zip(actual.stride(), expected.stride(), expected.shape)) if n > 1 and a != e]
    assert not diff, f"{what}: strides {actual.stride()} != {expected.stride()} (dims {[d for d, _, _ in diff]})"


def outputs_list(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


# -- IR ----------------------------------------------------------------------------------
def tensor_types(module: ModuleOp) -> list[tuple[str, TensorType]]:
    """Every tensor type in ``module`` (block arguments, operands, results), with where."""
    found = []
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    if isinstance(a.type, TensorType):
                        found.append((f"{op.name} block arg #{a.index}", a.type))
        for i, r in enumerate(op.results):
            if isinstance(r.type, TensorType):
                found.append((f"{op.name} result #{i}", r.type))
        for i, v in enumerate(op.operands):
            if isinstance(v.type, TensorType):
                found.append((f"{op.name} operand #{i}", v.type))
    return found


def assert_all_layouts(module: ModuleOp) -> None:
    types = tensor_types(module)
    assert types, "module has no tensor types at all"
    missing = [(where, str(t)) for where, t in types if not isinstance(t.encoding, LayoutAttr)]
    assert not missing, f"tensor types without #tsr.layout: {missing[:5]}"


def record_graphs(fn: Callable, args: Sequence, training: bool = False):
    """Run ``fn(*args)`` through Dynamo/AOTAutograd (tessera's decompositions),
    keeping each ATen graph and the real inputs it ran on.

    Returns ``(out, runs)`` where ``runs`` is a list of ``(kind, gm, inputs)``;
    with ``training`` the outputs are also back-propagated (sum of each)."""
    from tessera.compiler.capture import aot_backend

    runs: list[tuple[str, torch.fx.GraphModule, list]] = []

    def keep(kind: str):
        def compiler(gm, example_inputs):
            def run(inputs):
                runs.append((kind, gm, [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
                return gm(*inputs)

            run._boxed_call = True
            return run

        return compiler

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=aot_backend(keep("forward"), keep("backward")))
    if training:
        out = compiled(*args)
        outs = [o for o in outputs_list(out) if isinstance(o, torch.Tensor) and o.requires_grad]
        torch.autograd.backward([o.sum() for o in outs])
    else:
        with torch.no_grad():
            out = compiled(*args)
    torch._dynamo.reset()
    return out, runs


def record_launches(monkeypatch) -> list[str]:
    """The names of the kernels launched from now on (checked or trusted launches)."""
    from tessera.runtime.kernel import Kernel

    names: list[str] = []
    launch, trusted = Kernel.launch, Kernel.launch_trusted

    def counting(self, *tensors, **kw):
        names.append(self.name)
        return launch(self, *tensors, **kw)

    def counting_trusted(self, tensors):
        names.append(self.name)
        return trusted(self, tensors)

    monkeypatch.setattr(Kernel, "launch", counting)
    monkeypatch.setattr(Kernel, "launch_trusted", counting_trusted)
    # a program's straight-line function made from now on launches through launch_trusted
    monkeypatch.setattr(Kernel, "serial", property(lambda self: None))
    return names


# -- on a CUDA GPU ----------------------------------------------------------------------------------
def _cuda_reason() -> str | None:
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    from tessera.runtime.cuda import unavailable_reason

    return unavailable_reason()


needs_gpu = pytest.mark.skipif(_cuda_reason() is not None, reason="needs a CUDA GPU and cuda-bindings")
needs_avx2 = pytest.mark.skipif(not can_run_conv("avx2"), reason="the conv kernels need AVX2 and FMA")


@pytest.fixture
def full_fp32():
    """cuDNN convolutions and cuBLAS GEMMs in full float32 (torch allows TF32 for cuDNN by default)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


# -- the OpInfo tally (test_op_db.py) ---------------------------------------------------------

def pytest_terminal_summary(terminalreporter):
    """How the op_db samples of this run went: compiled, compiled with some ops
    through ATen, fallbacks (with their most common reasons), failures."""
    module = sys.modules.get("test_op_db")
    outcomes = getattr(module, "OUTCOMES", None)
    if not outcomes:
        return
    import collections

    ran = [o for *_, o in outcomes if o.status != "skipped"]
    counts = collections.Counter(o.status for o in ran)
    write = terminalreporter.write_line
    write(f"op_db: {len(ran)} samples that eager runs: " + ", ".join(
        f"{k} {v} ({100 * v / len(ran):.1f}%)" for k, v in counts.most_common()))
    dynamic = [o for *_, run_dynamic, o in outcomes if run_dynamic and o.status.startswith("compiled")]
    if dynamic:
        write(f"op_db with dynamic=True: {sum(o.per_size_class for o in dynamic)} of {len(dynamic)} compiled samples "
              "compiled per size class, the others once for every size")
    reasons = collections.Counter(o.reason.split(":")[0] + ": " + o.reason.split(":", 2)[-1][:90]
                                  for o in ran if o.status == "fallback")
    for reason, n in reasons.most_common(8):
        write(f"  fallback x{n}: {reason}")
