"""Distributed training through tessera: DDP and FSDP2 over models compiled with
``torch.compile(backend="tessera", options={"strict": True})`` train exactly as
they do eagerly.

Each test spawns a gloo process group on this machine (``distributed_workers.py``:
2 or 4 ranks, one thread each). Every rank trains its model for a few SGD steps
on its own data, first eagerly and then compiled, from the same seeds; its
losses and final ``state_dict`` (BatchNorm statistics included) must equal the
eager run's, and so must the trained model's output in eval mode; every graph
tessera was given must be compiled (``strict`` raises on a fallback; the
reports say so too).

- DDP: Dynamo's DDPOptimizer splits the graph at DDP's gradient buckets (a few
  KiB here), so tessera compiles several forward and backward graphs whose
  gradients DDP's hooks all-reduce between them. A ResNet stack (convs,
  train-mode BatchNorm, residuals) and the video-VAE block (conv3d, GroupNorm,
  upsample), on 2 and 4 ranks.
- DDP with its Python reducer and compiled autograd (``optimize_ddp="python_reducer"``):
  the gradients' all-reduces are ops of the backward graph tessera compiles.
- FSDP2 (``fully_shard``): two transformer MLP blocks, each compiled and then
  sharded (torchtitan's order), or sharded and then compiled as a whole (the
  graph breaks at FSDP's hooks); the compiled graphs run on the parameters FSDP
  all-gathers, and their gradients are reduce-scattered; 2 ranks.
"""

from __future__ import annotations

import socket

import pytest
import torch
import torch.distributed as dist

WORLD_SIZES = (2, 4)


def _gloo() -> bool:
    return dist.is_available() and dist.is_gloo_available()


pytestmark = pytest.mark.skipif(not _gloo(), reason="torch.distributed with the gloo backend is not available")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _train(case: str, wrap: str, world: int, tmp_path) -> list[dict]:
    """Each rank's ``{"eager": run, "tessera": run}`` (``distributed_workers._train``)."""
    import torch.multiprocessing as mp
    from distributed_workers import train_rank

    mp.spawn(train_rank, args=(world, _free_port(), case, wrap, str(tmp_path)), nprocs=world, join=True)
    return [torch.load(tmp_path / f"rank{r}.pt") for r in range(world)]


def _close(got, want, what: str) -> None:
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=lambda m: f"{what}: {m}")


def _assert_matches_eager(ranks: list[dict]) -> None:
    for r, runs in enumerate(ranks):
        eager, got = runs["eager"], runs["tessera"]
        _close(torch.tensor(got["losses"]), torch.tensor(eager["losses"]), f"rank {r} losses")
        _close(got["eval"], eager["eval"], f"rank {r} eval-mode output after training")
        assert got["state"].keys() == eager["state"].keys(), f"rank {r}"
        for name, want in eager["state"].items():
            _close(got["state"][name], want, f"rank {r} {name}")
    # The test can tell: the ranks saw different data (losses), which the
    # gradient reduction averaged into the same parameters everywhere.
    first = ranks[0]["eager"]
    assert first["parameters"]
    for runs in ranks[1:]:
        assert runs["eager"]["losses"][0] != first["losses"][0]
        for name in first["parameters"]:
            assert torch.equal(runs["eager"]["state"][name], first["state"][name]), f"eager replicas differ at {name}"


def _graph_reports(ranks: list[dict]) -> list[tuple[str, str, str]]:
    """Rank 0's reports ``(kind, status, summary)``, after checking that every
    rank's graphs were all compiled."""
    for r, runs in enumerate(ranks):
        reports = runs["tessera"]["reports"]
        assert reports, f"rank {r}: tessera compiled nothing"
        assert all(status == "compiled" for _, status, _ in reports), [s for *_, s in reports]
    return ranks[0]["tessera"]["reports"]


@pytest.mark.parametrize("world", WORLD_SIZES)
@pytest.mark.parametrize("case", ["resnet", "video_vae"])
def test_ddp_matches_eager(case, world, tmp_path):
    ranks = _train(case, "ddp", world, tmp_path)
    _assert_matches_eager(ranks)
    kinds = [kind for kind, *_ in _graph_reports(ranks)]
    # DDPOptimizer's split: several graphs, each with its backward, compiled once
    # for all steps, and as many inference graphs for the eval-mode pass
    assert kinds.count("backward") >= 2 and kinds.count("forward") == 2 * kinds.count("backward"), kinds


def test_ddp_compiled_autograd_matches_eager(tmp_path):
    """The gradients' all-reduces run inside a graph tessera compiled (as ATen calls)."""
    ranks = _train("resnet", "ddp_compiled_autograd", 2, tmp_path)
    _assert_matches_eager(ranks)
    reports = _graph_reports(ranks)
    assert any("_c10d_functional.all_reduce" in text for *_, text in reports), reports


@pytest.mark.parametrize("wrap", ["fsdp", "fsdp_compiled_model"])
def test_fsdp2_matches_eager(wrap, tmp_path):
    ranks = _train("mlp", wrap, 2, tmp_path)
    _assert_matches_eager(ranks)
    reports = _graph_reports(ranks)
    # each block's backward compiled once for all steps, on the weights FSDP gathered
    assert [kind for kind, *_ in reports].count("backward") == 2, reports
    assert all("mkl_linear x2" in text for kind, _, text in reports if kind == "forward"), reports


def test_a_graph_with_collectives_is_never_run_twice():
    """Should a compiled program fail while running, the captured graph is run again
    as ATen, unless it sends collectives: one rank sending an all-reduce twice
    would desynchronize every rank. Its failure then reaches the caller."""
    from tessera.compiler.backend import _rerun_of

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    reduced = graph.call_function(torch.ops._c10d_functional.all_reduce.default, (x, "sum", "0"))
    graph.output(graph.call_function(torch.ops._c10d_functional.wait_tensor.default, (reduced,)))
    assert _rerun_of(torch.fx.GraphModule(torch.nn.Module(), graph)) is None
    plain = torch.fx.symbolic_trace(lambda x: x.relu())
    assert _rerun_of(plain) == plain.forward
