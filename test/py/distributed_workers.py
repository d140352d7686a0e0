"""The ranks of ``test_distributed.py``: :func:`train_rank` runs in each process
of a gloo process group (``torch.multiprocessing.spawn``), trains a model with
DDP or FSDP2 eagerly and then compiled with tessera, from the same seeds on the
same data, and saves what each run saw: losses, final weights (the whole
``state_dict``, BatchNorm statistics included) and tessera's graph reports."""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import torch
import torch.distributed as dist
from torch import nn


def load_example_module(name: str) -> ModuleType:
    """``examples/<name>.py``. (Not conftest's loader: importing conftest in a rank
    would give the rank a compile cache of its own; the ranks share the session's.)"""
    mod_name = f"tessera_distributed_example_{name}"
    if mod_name not in sys.modules:  # registered: Dynamo imports a traced function's module by name
        path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        assert spec is not None and spec.loader is not None
        sys.modules[mod_name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[mod_name]

STEPS = 3
LR = 0.1
BUCKET_BYTES = 4096
"""DDP's gradient buckets: a few KiB, so that Dynamo's DDPOptimizer splits each
model below into several graphs (a 3x3 conv of 8 channels holds 2304 bytes)."""
STRICT = {"strict": True}


class DownBlock(nn.Module):
    """A ResNet block that halves the resolution: a stride-2 3x3 conv, and a
    stride-2 1x1 conv with its BatchNorm on the shortcut."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNetStack(nn.Module):
    """A small ResNet: a stem (conv, BatchNorm, ReLU), a basic block
    (``examples/resnet_block.py``), a downsampling block, global pooling and a
    linear head."""

    def __init__(self, channels: int = 8, classes: int = 4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU())
        self.blocks = nn.Sequential(load_example_module("resnet_block").BasicBlock(channels),
                                    DownBlock(channels, 2 * channels))
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def make_case(case: str, rank: int) -> tuple[nn.Module, list[torch.Tensor]]:
    """The model (the same on every rank, in train mode) and this rank's batches."""
    gen = torch.Generator().manual_seed(1000 + rank)
    if case == "resnet":
        torch.manual_seed(0)
        model: nn.Module = ResNetStack()
        shape: tuple[int, ...] = (2, 3, 8, 8)
    elif case == "video_vae":  # GroupNorm, SiLU, causal pads, conv3d, nearest upsample
        model = load_example_module("video_vae_block").make_block(channels=8)
        shape = (1, 8, 2, 6, 6)
    elif case == "mlp":  # two pre-LayerNorm transformer MLPs
        mlp = load_example_module("mlp")
        model = nn.Sequential(mlp.make_mlp(seed=0), mlp.make_mlp(seed=1))
        shape = (2, 8, 32)
    else:
        raise ValueError(f"unknown case {case!r}")
    return model.train(), [torch.randn(shape, generator=gen) for _ in range(STEPS)]


def _loss_step(forward):
    def step(x):
        loss = forward(x).square().mean()
        loss.backward()
        return loss

    return step


def _ddp(model: nn.Module, compiled: bool, forward_sync_buffers: bool = True):
    """DDP with its C++ reducer; compiled, Dynamo's DDPOptimizer splits the graph
    at DDP's buckets and DDP's hooks all-reduce each graph's gradients."""
    from torch.nn.parallel import DistributedDataParallel

    # DDPOptimizer asserts that its first bucket (torch's constant, 1 MiB) is no
    # larger than DDP's buckets; with buckets of a few KiB the first is as small.
    dist._DEFAULT_FIRST_BUCKET_BYTES = BUCKET_BYTES
    ddp = DistributedDataParallel(model, bucket_cap_mb=BUCKET_BYTES / 2**20, forward_sync_buffers=forward_sync_buffers)
    forward = torch.compile(ddp, backend="tessera", options=STRICT) if compiled else ddp
    return _loss_step(forward), forward


def _ddp_compiled_autograd(model: nn.Module, compiled: bool):
    """DDP's Python reducer with compiled autograd (``optimize_ddp="python_reducer"``):
    the whole step is compiled, and its backward graph holds the gradients'
    all-reduces. Eagerly: DDP with its C++ reducer (:func:`_ddp`). Neither syncs
    buffers before a forward: the Python reducer's DDP does not (with torch's own
    ``backend="eager"`` too), so BatchNorm statistics stay each rank's own."""
    if not compiled:
        return _ddp(model, compiled, forward_sync_buffers=False)
    from torch.nn.parallel import DistributedDataParallel

    # built inside _train's config patch: DDP picks its reducer when built
    ddp = DistributedDataParallel(model, bucket_cap_mb=BUCKET_BYTES / 2**20, forward_sync_buffers=False)
    return (torch.compile(_loss_step(ddp), backend="tessera", options=STRICT),
            torch.compile(ddp, backend="tessera", options=STRICT))


def _fsdp(model: nn.Module, compiled: bool):
    """FSDP2 as torchtitan applies it with ``torch.compile``: each block compiled,
    then each block and the root sharded. A compiled block runs between FSDP's
    hooks (all-gather before, reduce-scatter of its gradients after) on the
    gathered parameters."""
    from torch.distributed.fsdp import fully_shard

    for i, block in enumerate(model):
        if compiled:
            block = torch.compile(block, backend="tessera", options=STRICT)
            model[i] = block
        fully_shard(block)
    fully_shard(model)
    return _loss_step(model), model


def _fsdp_compiled_model(model: nn.Module, compiled: bool):
    """FSDP2 with the sharded model compiled as a whole: Dynamo breaks the graph
    at FSDP's hooks (run eagerly) and compiles each block's forward between them."""
    from torch.distributed.fsdp import fully_shard

    for block in model:
        fully_shard(block)
    fully_shard(model)
    forward = torch.compile(model, backend="tessera", options=STRICT) if compiled else model
    return _loss_step(forward), forward


WRAPS = {"ddp": _ddp, "ddp_compiled_autograd": _ddp_compiled_autograd, "fsdp": _fsdp,
         "fsdp_compiled_model": _fsdp_compiled_model}


def _full_state(model: nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.tensor import DTensor

    state = {}
    for k, v in model.state_dict().items():
        v = v.full_tensor() if isinstance(v, DTensor) else v  # FSDP2's shards, gathered
        state[k.replace("_orig_mod.", "")] = v.detach().clone()
    return state


def _train(case: str, wrap: str, rank: int, compiled: bool) -> dict:
    """``STEPS`` SGD steps, then the trained model in eval mode on the first batch."""
    from tessera.compiler.report import collect_reports

    torch._dynamo.reset()
    model, batches = make_case(case, rank)
    with contextlib.ExitStack() as stack:
        if compiled and wrap == "ddp_compiled_autograd":
            stack.enter_context(torch._dynamo.config.patch(optimize_ddp="python_reducer", compiled_autograd=True))
        reports = stack.enter_context(collect_reports())
        step, forward = WRAPS[wrap](model, compiled)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        losses = []
        for x in batches:
            opt.zero_grad()
            losses.append(step(x).item())
            opt.step()
        model.eval()
        with torch.no_grad():
            evaluated = forward(batches[0])
    return {"losses": losses, "eval": evaluated.detach().clone(), "state": _full_state(model),
            "parameters": [n.replace("_orig_mod.", "") for n, _ in model.named_parameters()],
            "reports": [(r.kind, r.status, r.summary()) for r in reports]}


def train_rank(rank: int, world: int, port: int, case: str, wrap: str, out_dir: str) -> None:
    """Rank ``rank`` of ``world``: train ``case`` wrapped as ``WRAPS[wrap]`` says,
    eagerly and with tessera; save both runs to ``out_dir/rank<r>.pt``."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)  # the ranks share this machine's cores
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        runs = {mode: _train(case, wrap, rank, mode == "tessera") for mode in ("eager", "tessera")}
        torch.save(runs, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()
