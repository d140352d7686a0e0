"""The compile cache's remote tier on a real Redis server (``runtime/remote_cache.py``).

A ``redis-server`` is started on 127.0.0.1 for these tests (Debian's package,
installed by ``scripts/setup.sh``; the tests skip, saying why, where it is
missing). Two cache directories on this machine stand in for two machines of a
fleet. What is pinned: a graph compiled on one machine is loaded from the server
by the other; a server that is down, killed mid-run, paused (slow) or holding
a corrupt entry costs a warning and a local compile, never a wrong result or a
hang.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
import torch
from conftest import example

from tessera.compiler import graph_cache
from tessera.compiler.report import collect_reports
from tessera.runtime import remote_cache
from tessera.runtime.cache import CompileCache
from tessera.runtime.errors import InvalidOption

redis = pytest.importorskip("redis", reason="the redis client is not installed (requirements.lock has it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A ``redis-server`` process on 127.0.0.1, without persistence."""

    def __init__(self, tmp_path):
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.skip("redis-server is not installed (scripts/setup.sh installs Debian's package as root)")
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen([exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(tmp_path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("redis-server did not start")
                time.sleep(0.05)

    def keys(self) -> list[bytes]:
        return sorted(self.client.keys(remote_cache.PREFIX + "*"))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path):
    s = RedisServer(tmp_path)
    yield s
    s.kill()


@pytest.fixture
def fresh_tiers(monkeypatch):
    """Each test gets tiers of its own (a failure seen by one test does not switch off another's)."""
    monkeypatch.setattr(remote_cache, "_tiers", {})


def _machine(monkeypatch, tmp_path, name: str, url: str) -> None:
    """This process as machine ``name``: a cache directory of its own, the fleet's server."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / name))
    monkeypatch.setenv("TESSERA_REMOTE_CACHE", url)


def _run(model, args):
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        y = torch.compile(model, backend="tessera", options={"strict": True})(*args)
    assert reports and all(r.compiled for r in reports), [r.summary() for r in reports]
    return y, [r.cached for r in reports]


def _eager(model, args):
    with torch.no_grad():
        return model(*args)


def _close(got, want):
    assert type(got) is torch.Tensor
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4 * max(1.0, want.abs().max().item()))


def test_a_second_machine_loads_from_the_server(server, fresh_tiers, monkeypatch, tmp_path):
    model, args = example("video_vae_block")
    _machine(monkeypatch, tmp_path, "a", server.url)
    y_a, cached = _run(model, args)
    assert cached == [""]
    published = server.keys()
    assert published, "nothing was published"
    _machine(monkeypatch, tmp_path, "b", server.url)
    y_b, cached = _run(model, args)
    assert cached == ["remote"]
    assert torch.equal(y_a, y_b)
    assert list((tmp_path / "b").rglob("*.tsa")), "what came from the server is kept locally"
    _, cached = _run(model, args)
    assert cached == ["local"]


def test_a_corrupt_remote_entry_is_compiled_again(server, fresh_tiers, monkeypatch, tmp_path, caplog):
    model, args = example("resnet_block")
    _machine(monkeypatch, tmp_path, "a", server.url)
    _run(model, args)
    for k in server.keys():
        value = server.client.get(k)
        server.client.set(k, value[:-7] + bytes([value[-7] ^ 0xFF]) + value[-6:])
    _machine(monkeypatch, tmp_path, "b", server.url)
    y, cached = _run(model, args)
    assert cached == [""] and "corrupt entry" in caplog.text
    _close(y, _eager(model, args))


def test_a_server_that_is_down_costs_a_local_compile(fresh_tiers, monkeypatch, tmp_path, caplog):
    model, args = example("resnet_block")
    _machine(monkeypatch, tmp_path, "a", f"redis://127.0.0.1:{_free_port()}/0")
    start = time.monotonic()
    y, cached = _run(model, args)
    assert cached == [""] and "remote cache" in caplog.text and "ConnectionError" in caplog.text
    assert len([r for r in caplog.records if "remote cache" in r.getMessage()]) == 1, "warned once per outage"
    _close(y, _eager(model, args))
    assert time.monotonic() - start < 60


def test_the_server_killed_mid_run(server, fresh_tiers, monkeypatch, tmp_path, caplog):
    _machine(monkeypatch, tmp_path, "a", server.url)
    model, args = example("resnet_block")
    _run(model, args)
    server.kill()
    other, other_args = example("mobilenet_block")
    y, cached = _run(other, other_args)
    assert cached == [""] and "remote cache" in caplog.text
    _close(y, _eager(other, other_args))


def test_a_slow_server_times_out(server, fresh_tiers, monkeypatch, tmp_path, caplog):
    """A server that does not answer within the timeout is left for a local compile, not waited on."""
    _machine(monkeypatch, tmp_path, "a", f"{server.url}?socket_timeout=0.3")
    model, args = example("resnet_block")
    server.client.execute_command("CLIENT", "PAUSE", "4000", "ALL")
    start = time.monotonic()
    y, cached = _run(model, args)
    assert cached == [""] and "TimeoutError" in caplog.text
    _close(y, _eager(model, args))
    tier = remote_cache.remote_tier(f"{server.url}?socket_timeout=0.3")
    assert tier.failures == 1 and not tier.available, "after a failure the tier is off for a while"
    assert time.monotonic() - start < 30


def test_the_tier_alone(server, tmp_path):
    (tmp_path / "file").write_text("")
    tier = remote_cache.RemoteTier(server.url)
    cache = CompileCache(tmp_path / "file" / "cache", tier)  # a directory that cannot be made
    cache.put_bytes("k" * 64, b"payload")
    assert cache.write_errors == 1 and server.keys() == [b"tessera:" + b"k" * 64]
    assert cache.get_bytes("k" * 64) == b"payload" and cache.remote_hits == 1
    assert cache.get_bytes("j" * 64) is None and tier.misses == 1
    assert graph_cache.lookup(cache, "k" * 64) is None  # bytes that are no compiled graph


def test_a_url_that_is_not_redis():
    with pytest.raises(InvalidOption, match="redis://"):
        remote_cache.remote_tier("http://127.0.0.1:6379")
