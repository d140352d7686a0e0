"""The graph-level cache (``compiler/graph_cache.py``): a graph compiled once is
loaded, not compiled, by the next process that compiles it, and runs the same.

What is pinned: a second compile (after ``torch._dynamo.reset()``, and in a
fresh process) loads the program from the cache and gives the same values;
the key changes with everything that changes the program (sizes, strides,
dtypes, constants, options) and not otherwise; a damaged, foreign or
unloadable entry is compiled again; a read-only or full cache directory and
four processes compiling the same model at once all give eager's answer.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, example

from tessera.compiler import graph_cache
from tessera.compiler.capture import capture
from tessera.compiler.graph_cache import CompiledGraph, graph_key
from tessera.compiler.report import collect_reports
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.targets.x86.conv_choice import host_isa
from tessera.runtime.cache import CompileCache

STRICT = {"strict": True}


def _run(model, args, options=STRICT):
    """``model(*args)`` compiled by tessera in a fresh Dynamo, and the reports of its graphs."""
    torch._dynamo.reset()
    with torch.no_grad(), collect_reports() as reports:
        y = torch.compile(model, backend="tessera", options=options)(*args)
    return y, reports


def _entries(root) -> list:
    cache = CompileCache(root)
    found = []
    for path in sorted(root.rglob("*.tsa")):
        entry = graph_cache.lookup(cache, path.stem)
        if entry is not None:
            found.append(path)
    return found


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", ["video_vae_block", "resnet_block", "int8_linear"])
def test_second_compile_loads_the_program(cache_dir, name):
    model, args = example(name)
    y1, first = _run(model, args)
    assert first and all(r.compiled and not r.cached for r in first), [r.summary() for r in first]
    y2, second = _run(model, args)
    assert [r.cached for r in second] == ["local"] * len(first), [r.summary() for r in second]
    assert [r.kernels for r in second] == [r.kernels for r in first]
    assert "from the local graph cache" in second[0].summary()
    assert type(y2) is torch.Tensor and torch.equal(y1, y2)
    with torch.no_grad():
        want = model(*args)
    torch.testing.assert_close(y2, want, rtol=1e-4, atol=1e-4 * max(1.0, want.abs().max().item()))


@pytest.mark.parametrize("name", ["video_vae_block", "mobilenet_block"])
def test_a_fresh_process_loads_the_program_without_the_ir(cache_dir, name):
    """The graph compiled by one process is loaded by the next, which imports no
    IR at all: no xDSL, no import of the graph, no parse (``host_plan``); its
    convs on tessera's kernels load from their specs."""
    script = textwrap.dedent(f"""
        import json, sys, torch
        from tessera.compiler.model_loader import load_example
        from tessera.compiler.report import collect_reports
        model, (x,) = load_example({str(REPO / "examples")!r} + "/" + sys.argv[2] + ".py")
        with torch.no_grad(), collect_reports() as reports:
            y = torch.compile(model, backend="tessera", options={{"strict": True, "freezing": True}})(x)
            want = model(x)
        torch.save((y, want), sys.argv[1])
        print(json.dumps({{"cached": [r.cached for r in reports], "conv_kernels": [r.conv_kernels for r in reports],
                          "xdsl": any(m == "xdsl" or m.startswith("xdsl.") for m in sys.modules)}}))
    """)
    runs = []
    for i in range(2):
        out = cache_dir / f"y{i}.pt"
        proc = subprocess.run([sys.executable, "-c", script, str(out), name], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "TESSERA_CACHE_DIR": str(cache_dir / "cache")})
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append((json.loads(proc.stdout.strip().splitlines()[-1]), torch.load(out)))
    (cold, (y_cold, want)), (warm, (y_warm, _)) = runs
    assert cold["cached"] == [""] and cold["xdsl"]
    assert warm == {**cold, "cached": ["local"], "xdsl": False}
    assert torch.equal(y_cold, y_warm)
    torch.testing.assert_close(y_warm, want, rtol=1e-4, atol=1e-4 * max(1.0, want.abs().max().item()))
    if name == "mobilenet_block" and host_isa() is not None:
        assert warm["conv_kernels"] != [0], "the block's convs should run on tessera's kernels"


def test_a_program_that_does_not_pickle_is_stored_as_ir(cache_dir, monkeypatch):
    """Where a step of the program does not pickle, the entry holds the host graph
    as text, and loading it builds the program from that (parsing it)."""
    def unpicklable(host, kernels):
        raise TypeError("a step that does not pickle")

    monkeypatch.setattr(graph_cache, "dump_program", unpicklable)
    model, args = example("video_vae_block")
    y1, _ = _run(model, args)
    (entry,) = _entries(cache_dir)
    stored = graph_cache.lookup(CompileCache(cache_dir), entry.stem)
    assert stored.program is None and "tsr.launch" in stored.host
    y2, reports = _run(model, args)
    assert [r.cached for r in reports] == ["local"] and reports[0].compiled
    assert torch.equal(y1, y2)


def _key(fn, args, **options) -> str | None:
    (gm,) = capture(fn, args).forward
    return graph_key(gm, CompileOptions("x86", **options))


def _conv(x, w):
    return F.conv2d(x, w, padding=1).relu()


def test_key_covers_what_changes_the_program():
    x, w = torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3)
    base = _key(_conv, (x, w))
    assert base is not None and base == _key(_conv, (torch.randn(1, 4, 8, 8), torch.randn(4, 4, 3, 3)))
    others = {
        "size": _key(_conv, (torch.randn(1, 4, 9, 8), w)),
        "strides": _key(_conv, (x.to(memory_format=torch.channels_last), w)),
        "dtype": _key(_conv, (x.double(), w.double())),
        "freezing": _key(_conv, (x, w), freezing=True),
        "features": _key(_conv, (x, w), features="+avx2,+fma"),
        "conv_kernels": _key(_conv, (x, w), conv_kernels=False),
        "disable": _key(_conv, (x, w), disable=("fuse-conv-epilogues",)),
    }
    assert len({base, *others.values()}) == len(others) + 1, others


def test_key_covers_constant_values():
    """A tensor constant's values are part of the key (two constants of one shape differ)."""
    keys = set()
    for value in (1.0, 2.0, 1.0):
        keys.add(_key(lambda x, v=value: x * torch.tensor([0.5, 0.25, 4.0, v]), (torch.randn(4),)))
    assert len(keys) == 2 and None not in keys


def _damage(entry, how: str) -> None:
    blob = entry.read_bytes()
    entry.write_bytes({"truncate": blob[: len(blob) // 2], "flip": blob[:-10] + bytes([blob[-10] ^ 1]) + blob[-9:],
                       "garbage": os.urandom(len(blob))}[how])


@pytest.mark.parametrize("how", ["truncate", "flip", "garbage", "foreign", "unloadable", "unparsable"])
def test_a_bad_entry_is_compiled_again(cache_dir, how, caplog):
    model, args = example("resnet_block")
    y1, _ = _run(model, args)
    (entry,) = _entries(cache_dir)
    if how == "foreign":  # another graph's entry, stored under this key
        _run(*example("mobilenet_block"))
        foreign = next(p for p in _entries(cache_dir) if p != entry)
        entry.write_bytes(foreign.read_bytes())
    elif how in ("unloadable", "unparsable"):  # a whole entry whose program does not load, or whose IR does not parse
        good = graph_cache.lookup(CompileCache(cache_dir), entry.stem)
        bad = (CompiledGraph(good.program[: len(good.program) // 2], None, good.artifact, good.output_is_none)
               if how == "unloadable" else
               CompiledGraph(None, "builtin.module {\n  tsr.no_such_op\n}", good.artifact, good.output_is_none))
        CompileCache(cache_dir).put_bytes(entry.stem, bad.to_bytes())
    else:
        _damage(entry, how)
    y2, reports = _run(model, args)
    assert [r.cached for r in reports] == [""] and reports[0].compiled
    assert torch.equal(y1, y2)
    if how in ("unloadable", "unparsable"):
        assert "could not be loaded" in caplog.text
    y3, reports = _run(model, args)  # the entry was written again, whole
    assert [r.cached for r in reports] == ["local"] and torch.equal(y1, y3)


_WORKER = textwrap.dedent("""
    import resource, signal, sys, torch
    from tessera.compiler.model_loader import load_example
    limit = int(sys.argv[3])
    if limit:  # a full disk: every write past `limit` bytes fails (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    model, (x,) = load_example(f"{sys.argv[1]}/{sys.argv[4]}.py")
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="tessera", options={"strict": True})(x)
    err = ((got - want).abs().max() / want.abs().max().clamp(min=1)).item()
    print("ERR", err)
    sys.exit(0 if err < 1e-4 else 3)
""")


def _workers(n: int, cache, limit: int = 0, model: str = "resnet_block",
             permissions: bool = False) -> list[subprocess.CompletedProcess]:
    """``n`` processes at once, each compiling ``model`` with ``cache`` and checking
    it against eager; with ``permissions``, bound by file permissions even as root."""
    env = {**os.environ, "TESSERA_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-c", _WORKER, str(REPO / "examples"), str(cache), str(limit), model]
    if permissions and os.geteuid() == 0:
        if shutil.which("capsh") is None:
            pytest.skip("root ignores file permissions, and capsh (to drop that) is not installed")
        cmd = ["capsh", "--drop=cap_dac_override", "--", "-c", shlex.join(cmd)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def test_a_full_disk_still_runs_the_built_code(tmp_path):
    (proc,) = _workers(1, tmp_path / "cache", limit=4096)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "cannot be written" in proc.stderr


def test_four_processes_compiling_one_model_at_once(tmp_path):
    procs = _workers(4, tmp_path / "cache")
    assert [p.returncode for p in procs] == [0] * 4, [p.stderr[-2000:] for p in procs]
    assert not list((tmp_path / "cache").rglob("*.tmp")), "temporary files left behind"
    (entry,) = _entries(tmp_path / "cache")  # one graph, one whole entry
    assert entry.stat().st_size > 0


def test_a_read_only_cache_still_runs(tmp_path):
    """A cache this process cannot write: empty, the graph is compiled (with a
    warning); filled by another user, its entries are used."""
    warm, cold = tmp_path / "warm", tmp_path / "cold"
    (filled,) = _workers(1, warm, model="video_vae_block")
    assert filled.returncode == 0, filled.stderr[-3000:]
    cold.mkdir()
    for d in (tmp_path, *(p for p in [warm, *warm.rglob("*")] if p.is_dir()), cold):
        d.chmod(0o555)
    try:
        runs = [_workers(1, root, model="video_vae_block", permissions=True)[0] for root in (cold, warm)]
    finally:
        for d in (tmp_path, *(p for p in [warm, *warm.rglob("*")] if p.is_dir()), cold):
            d.chmod(0o755)
    assert [p.returncode for p in runs] == [0, 0], [p.stderr[-3000:] for p in runs]
    assert "cannot be written" in runs[0].stderr and "cannot be written" not in runs[1].stderr


def test_a_graph_that_cannot_be_hashed_has_no_key():
    """A constant whose bytes cannot be read (a meta tensor) or an object that is no
    tensor or graph: the graph is compiled each time, never keyed by part of itself."""
    for value in (torch.empty(4, device="meta"), object()):
        graph = torch.fx.Graph()
        x = graph.placeholder("x")
        graph.output(graph.call_function(torch.ops.aten.add.Tensor, (x, graph.get_attr("c"))))
        root = torch.nn.Module()
        root.c = value
        gm = torch.fx.GraphModule(root, graph)
        x.meta["val"] = torch.empty(4)
        assert graph_key(gm, CompileOptions("x86")) is None


def test_a_graph_of_symbolic_sizes_is_cached_for_every_size(cache_dir):
    """A graph compiled for dynamic sizes is stored once; a process that first
    calls it at another size (other hints, the same symbols and guards) loads it,
    and the loaded program serves every size."""
    model, (x,) = example("vae2d_block")
    sizes = [16, 20, 24]  # sizes under the same guards (a size equal to the 32 channels would specialize)
    outs = {}
    for first in (sizes[0], sizes[1]):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="tessera", dynamic=True, options=STRICT)
        with torch.no_grad(), collect_reports() as reports:
            for n in [first, *sizes]:
                xs = torch.randn(1, x.shape[1], n, n, generator=torch.Generator().manual_seed(n))
                y = compiled(xs)
                torch.testing.assert_close(y, model(xs), rtol=1e-4, atol=1e-4 * max(1.0, y.abs().max().item()))
                outs.setdefault(n, []).append(y)
        assert reports and all(r.dynamic and r.compiled for r in reports), [r.summary() for r in reports]
        assert [r.cached for r in reports] == ["" if first == sizes[0] else "local"], [r.summary() for r in reports]
    assert all(torch.equal(a, b) for a, b, *_ in outs.values())


def test_the_key_of_a_symbolic_graph_names_its_symbols_not_its_hints():
    def graph_of(fn, *xs, dynamic=True):
        captured = []

        def backend(gm, example_inputs):
            captured.append(gm)
            return gm.forward

        torch._dynamo.reset()
        from torch._functorch.aot_autograd import aot_module_simplified
        torch.compile(fn, backend=lambda gm, ins: aot_module_simplified(gm, ins, fw_compiler=backend),
                      dynamic=dynamic)(*xs)
        return graph_key(captured[0], CompileOptions("x86"))

    relu_at = [graph_of(torch.relu, torch.randn(n, 8)) for n in (4, 6)]
    assert relu_at[0] is not None and relu_at[0] == relu_at[1]
    assert graph_of(torch.relu, torch.randn(4, 8), dynamic=False) != relu_at[0]
    assert graph_of(lambda t: t.sum(0), torch.randn(4, 8)) != relu_at[0]
