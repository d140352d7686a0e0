"""The runtime: devices, loaded modules, checked launches, threading, the
compile cache and programs."""

from __future__ import annotations

import multiprocessing
import os
import weakref
from pathlib import Path

import pytest
import torch
from conftest import random_tensor
from kernel_testing import kernel, load, memref, parse_kernels
from xdsl.dialects.builtin import TensorType, f32

from tessera.compiler.build import compile_artifact, compile_kernels
from tessera.compiler.placements import placement_of
from tessera.dialects.tsr.layout import LayoutAttr
from tessera.runtime import (
    Alloc,
    Artifact,
    Call,
    CompileCache,
    Device,
    Launch,
    Program,
    RuntimeOptions,
)
from tessera.runtime.cache import cache_key
from tessera.runtime.cpu import split
from tessera.runtime.errors import KernelNotFound, LoadError, ProgramError, SignatureMismatch, UnsupportedDevice

GEN = torch.Generator().manual_seed(0)
NHWC = (320, 1, 64, 8)  # strides of a 2x8x5x8 tensor stored channels-last


def scale_kernel() -> str:
    """``y = x * s[c] + sum over w of x`` on NCHW tensors stored NHWC; grid (n, c, h)."""
    t = memref([2, 8, 5, 8], "f32", NHWC)
    return kernel("scale", [("x", t), ("s", "memref<8xf32>"), ("y", t)], [2], [2, 8, 5], f"""
    %zero = arith.constant 0.0 : f32
    %c8 = arith.constant 8 : index
    %sv = memref.load %s[%i1] : memref<8xf32>
    %tot = scf.for %w = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {{
      %v = memref.load %x[%i0, %i1, %i2, %w] : {t}
      %a = arith.addf %acc, %v fastmath<reassoc> : f32
      scf.yield %a : f32
    }}
    scf.for %w = %c0 to %c8 step %c1 {{
      %v = memref.load %x[%i0, %i1, %i2, %w] : {t}
      %m = arith.mulf %v, %sv : f32
      %r = arith.addf %m, %tot : f32
      memref.store %r, %y[%i0, %i1, %i2, %w] : {t}
    }}""")


def scale_inputs():
    x = random_tensor((2, 8, 5, 8), torch.float32, NHWC, GEN)
    s = torch.randn(8, generator=GEN)
    return x, s, torch.empty_strided((2, 8, 5, 8), NHWC)


def scale_reference(x, s):
    return x * s.view(1, 8, 1, 1) + x.sum(3, keepdim=True)


@pytest.fixture(scope="module")
def scale_module():
    return load(scale_kernel())


def test_kernel_runs_and_matches_torch(scale_module):
    x, s, y = scale_inputs()
    scale_module.kernel("scale")(x, s, y)
    torch.testing.assert_close(y, scale_reference(x, s), rtol=1e-5, atol=1e-5)


def test_thread_splits_give_identical_results(scale_module):
    k = scale_module.kernel("scale")
    x, s, y1 = scale_inputs()
    k.launch(x, s, y1, chunks=1)
    for chunks in (2, 3, 7, 80, 1000):  # uneven splits cut rows of the innermost grid dim
        y = torch.full_like(y1, float("nan"))
        k.launch(x, s, y, chunks=chunks)
        assert torch.equal(y, y1), f"{chunks} chunks"


def test_parallel_launches_run_on_openmp_threads(monkeypatch):
    """A split launch goes through OpenMP's team (torch's libgomp), one
    ``GOMP_parallel`` per launch with as many threads as chunks; without
    libgomp it still gives the same result on the thread pool."""
    from tessera.runtime import openmp

    assert openmp.available()  # torch's CPU build carries libgomp
    real = openmp._gomp()
    calls = []

    class Counting:
        def GOMP_parallel(self, fn, data, threads, flags):
            calls.append(threads)
            real.GOMP_parallel(fn, data, threads, flags)

    module = load(scale_kernel())  # loaded before the patch: trampolines exist
    monkeypatch.setattr(openmp, "_gomp", lambda: Counting())
    k = module.kernel("scale")
    x, s, y1 = scale_inputs()
    k.launch(x, s, y1, chunks=1)
    assert calls == []  # one chunk runs on the calling thread
    y = torch.full_like(y1, float("nan"))
    k.launch(x, s, y, chunks=2)
    assert calls == [2] and torch.equal(y, y1)

    monkeypatch.setattr(openmp, "_gomp", lambda: None)  # no libgomp: the thread pool
    pooled = load(scale_kernel())
    y = torch.full_like(y1, float("nan"))
    pooled.kernel("scale").launch(x, s, y, chunks=3)
    assert calls == [2] and torch.equal(y, y1)


def test_split_covers_the_range_once():
    for total, chunks in ((80, 3), (5, 8), (1, 4), (1000, 7)):
        ranges = split(total, chunks)
        assert ranges[0][0] == 0 and ranges[-1][1] == total
        assert all(lo < hi for lo, hi in ranges) and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_default_threading_small_runs_inline_big_splits():
    n = 1 << 20
    t = memref([n], "f32")
    big = kernel("big", [("x", t), ("y", t)], [1], [n], f"""
    %v = memref.load %x[%i0] : {t}
    %e = math.tanh %v : f32
    memref.store %e, %y[%i0] : {t}""")
    opts = RuntimeOptions(cache_dir=None, num_threads=4)
    module = compile_kernels(parse_kernels(big), cache=None, options=opts)
    k = module.kernel("big")
    assert k.default_chunks == 4
    x = torch.randn(n, generator=GEN)
    y = torch.empty(n)
    k(x, y)
    torch.testing.assert_close(y, torch.tanh(x.double()).float(), rtol=3e-7, atol=0)
    small = compile_kernels(parse_kernels(scale_kernel()), cache=None, options=opts).kernel("scale")
    assert small.default_chunks == 1


def test_signature_mismatches_raise_typed_errors(scale_module):
    k = scale_module.kernel("scale")
    x, s, y = scale_inputs()
    cases = {
        "takes 3 tensors": (x, s),
        "shape": (x, torch.randn(9), y),
        "strides": (x.contiguous(), s, y),
        "dtype": (x.double(), s, y),
        "is on meta": (x, s, torch.empty_strided((2, 8, 5, 8), NHWC, device="meta")),
        "expected a tensor": (x, [1.0] * 8, y),
        "overlaps": (x, s, x),
    }
    for what, args in cases.items():
        with pytest.raises(SignatureMismatch, match=what):
            k(*args)
    with pytest.raises(KernelNotFound, match="no kernel @nope"):
        scale_module.kernel("nope")


def test_size_one_dims_accept_any_stride():
    t = memref([1, 4], "f32")
    text = kernel("one", [("x", t), ("y", t)], [1], [1, 4], f"""
    %v = memref.load %x[%i0, %i1] : {t}
    memref.store %v, %y[%i0, %i1] : {t}""")
    x = torch.randn(4, 2, generator=GEN)[:, :1].t()  # shape (1, 4), strides (1, 2): not what the kernel wants
    with pytest.raises(SignatureMismatch, match="strides"):
        load(text).kernel("one")(x, torch.empty(1, 4))
    x = torch.randn(3, 4, generator=GEN)[1:2]  # shape (1, 4), strides (4, 1): fine
    y = torch.empty(1, 4)
    load(text).kernel("one")(x, y)
    assert torch.equal(x, y)


def test_devices():
    """cpu always; cuda and mps where this host has them, else a clear refusal."""
    assert Device("cpu").type == "cpu"
    available = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    for kind in ("cuda", "mps", torch.device("cuda", 0)):
        if available[torch.device(kind).type]:
            assert Device(kind).type == torch.device(kind).type
            continue
        with pytest.raises(UnsupportedDevice):
            Device(kind)
    with pytest.raises(UnsupportedDevice):
        Device("xla")


def test_artifact_round_trip_and_load_checks():
    art = compile_artifact(parse_kernels(scale_kernel()), "x86", cache=None)
    again = Artifact.from_bytes(art.to_bytes())
    assert again == art
    with pytest.raises(ValueError):
        Artifact.from_bytes(art.to_bytes()[:20])
    with pytest.raises(LoadError, match="the cpu device loads objects, not ptx"):
        Device("cpu").load(Artifact("ptx", "ptx", b"", ()))
    alien = Artifact("x86", "obj", art.data, art.signatures, "x86|x86_64-unknown-linux-gnu|cpu|+notafeature|None")
    with pytest.raises(LoadError, match="notafeature"):
        Device("cpu").load(alien)


# -- compile cache -------------------------------------------------------------------------
def test_cache_hit_and_key(tmp_path):
    cache = CompileCache(tmp_path)
    kernels = parse_kernels(scale_kernel())
    a1 = compile_artifact(kernels, cache=cache)
    assert (cache.hits, cache.misses) == (0, 1)
    a2 = compile_artifact(kernels, cache=cache)
    assert (cache.hits, cache.misses) == (1, 1) and a2 == a1
    compile_artifact(kernels, features="+avx2,+fma", cache=cache)  # another target: another key
    assert cache.misses == 2
    assert len(list(tmp_path.rglob("*.tsa"))) == 2
    assert not list(tmp_path.rglob("*.tmp"))
    x, s, y = scale_inputs()
    compile_kernels(kernels, cache=cache).kernel("scale")(x, s, y)
    torch.testing.assert_close(y, scale_reference(x, s), rtol=1e-5, atol=1e-5)
    assert cache_key("a", "bc") != cache_key("ab", "c")


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_cache_entry_is_rebuilt(tmp_path, damage):
    cache = CompileCache(tmp_path)
    kernels = parse_kernels(scale_kernel())
    good = compile_artifact(kernels, cache=cache)
    (entry,) = tmp_path.rglob("*.tsa")
    blob = entry.read_bytes()
    entry.write_bytes({"truncate": blob[: len(blob) // 2], "flip": blob[:-10] + bytes([blob[-10] ^ 1]) + blob[-9:],
                       "garbage": os.urandom(len(blob)), "empty": b""}[damage])
    assert cache.get(entry.stem) is None
    rebuilt = compile_artifact(kernels, cache=cache)
    assert rebuilt == good and cache.misses == 2
    assert entry.read_bytes() == blob  # the entry was rewritten whole


def _hammer_cache(root: str, key: str, barrier, rounds: int, results) -> None:
    kernels = parse_kernels(scale_kernel())
    cache = CompileCache(root)
    barrier.wait()
    artifact = compile_artifact(kernels, cache=cache)
    bad = 0
    for _ in range(rounds):
        cache.put(key, artifact)
        got = cache.get(key)
        bad += got is None or got != artifact
    results.put((bad, artifact.to_bytes()))


def test_concurrent_writers_from_two_processes(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_hammer_cache, args=(str(tmp_path), "k" * 64, barrier, 200, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outs = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [bad for bad, _ in outs] == [0, 0], "a reader saw a missing or partial entry"
    assert outs[0][1] == outs[1][1], "the two processes built different code"
    assert not list(Path(tmp_path).rglob("*.tmp")), "temporary files left behind"
    entries = list(Path(tmp_path).rglob("*.tsa"))
    assert len(entries) == 2  # the compile key and the hammered key
    cache = CompileCache(tmp_path)
    assert all(cache.get(e.stem) is not None for e in entries)


def test_cache_dir_option_read_once(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "a"))
    opts = RuntimeOptions()
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "b"))
    assert opts.cache_dir == tmp_path / "a"
    assert RuntimeOptions().cache_dir == tmp_path / "b"
    monkeypatch.delenv("TESSERA_CACHE_DIR")
    assert RuntimeOptions().cache_dir == Path.home() / ".cache" / "tessera"


# -- programs ------------------------------------------------------------------------------
def test_program_allocs_launches_calls_and_frees(scale_module):
    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    seen: list[weakref.ref] = []

    def watch(t):
        seen.append(weakref.ref(t))
        return t.relu()

    prog = Program(steps=[Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(watch, (2,), (3,)),
                          Call(lambda a, b: (a + 1, a * b.view(1, 8, 1, 1)), (3, 1), (4, 5))],
                   inputs=(0, 1), outputs=(5, 4), reuse_buffers=False)
    x, s, _ = scale_inputs()
    out5, out4 = prog.run(x, s)
    r = scale_reference(x, s).relu()
    torch.testing.assert_close(out4, r + 1, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out5, r * s.view(1, 8, 1, 1), rtol=1e-5, atol=1e-5)
    assert seen and seen[0]() is None, "the intermediate kernel output was not freed"


def test_program_reuses_its_intermediate_buffers_when_no_one_holds_them(scale_module):
    """An allocated intermediate is written again on the next run (same memory),
    but not while an output of an earlier run still views it; results stay right."""
    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    refs = []

    def relu(t):
        refs.append(weakref.ref(t))
        return t.relu()

    plain = Program(steps=[Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(relu, (2,), (3,))],
                    inputs=(0, 1), outputs=(3,))
    x, s, _ = scale_inputs()
    for _ in range(3):
        (y,) = plain.run(x, s)
        torch.testing.assert_close(y, scale_reference(x, s).relu(), rtol=1e-5, atol=1e-5)
    assert refs[0]() is not None and all(r() is refs[0]() for r in refs)  # one buffer for the three runs

    viewing = Program(steps=[Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(lambda t: t[:, :4], (2,), (3,))],
                      inputs=(0, 1), outputs=(3,))  # the output is a view of the intermediate
    (first,) = viewing.run(x, s)
    kept = first.clone()
    x2, s2, _ = scale_inputs()
    (second,) = viewing.run(x2, s2)
    torch.testing.assert_close(first, kept, rtol=0, atol=0)  # not overwritten by the second run
    torch.testing.assert_close(second, scale_reference(x2, s2)[:, :4], rtol=1e-5, atol=1e-5)
    del first, kept
    (third,) = viewing.run(x, s)
    torch.testing.assert_close(third, scale_reference(x, s)[:, :4], rtol=1e-5, atol=1e-5)

    held = []  # a library that keeps the tensor object itself (as a cache would)
    holding = Program(steps=[Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(lambda t: (held.append(t), t + 0)[1], (2,), (3,))],
                      inputs=(0, 1), outputs=(3,))
    holding.run(x, s)
    before = held[0].clone()
    holding.run(x2, s2)
    assert held[1] is not held[0]
    torch.testing.assert_close(held[0], before, rtol=0, atol=0)


def _chain(k, nhwc, extra=()) -> list:
    """y2 = k(x, s), y3 = k(y2, s), y4 = k(y3, s) (buffer 2 dead after the second launch), then ``extra``."""
    return [Alloc(2, nhwc), Launch(k, (0, 1, 2)), Alloc(3, nhwc), Launch(k, (2, 1, 3)),
            Alloc(4, nhwc), Launch(k, (3, 1, 4)), *extra]


def test_memory_plan_shares_memory_between_buffers_never_alive_at_once(scale_module):
    """Kept intermediates share a slot where their lifetimes do not overlap; a
    call's result shares its argument's lifetime; what an output may view is
    never planned; results are right on every run."""
    from tessera.runtime.memory_plan import nbytes, plan_slots

    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    steps = _chain(k, nhwc, [Alloc(6, nhwc), Launch(k, (4, 1, 6)), Call(torch.relu, (6,), (7,))])
    plan = plan_slots(steps, (0, 1), (7,))
    assert plan.slot_of[2] == plan.slot_of[4] != plan.slot_of[3]  # 4 is made after 2's last read
    assert 6 not in plan.slot_of  # relu(6) is the output, and may be a view of it
    assert len(plan.sizes) == 2 and min(plan.sizes) >= nbytes(nhwc)
    viewing = [Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(lambda t: t.view_as(t), (2,), (5,)),
               Alloc(3, nhwc), Launch(k, (5, 1, 3)), Alloc(4, nhwc), Launch(k, (3, 1, 4)), Call(torch.relu, (4,), (6,))]
    plan_v = plan_slots(viewing, (0, 1), (6,))
    assert plan_v.slot_of[2] != plan_v.slot_of[3]  # 2 lives on in its view 5, which the launch writing 3 reads

    prog = Program(steps=steps, inputs=(0, 1), outputs=(7,))
    x, s, _ = scale_inputs()

    def want(x, s):
        for _ in range(4):
            x = scale_reference(x, s)
        return x.relu()
    blocks = []
    for _ in range(3):
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, want(x, s), rtol=1e-4, atol=1e-4)
        blocks.append([weakref.ref(t) for t in (*prog._memory.blocks, *prog._memory.views.values())])
    assert all(a() is b() is c() is not None for a, b, c in zip(*blocks))  # the same memory and views every run
    assert prog._memory.kept_bytes() == sum(plan.sizes)


@pytest.mark.parametrize("seed", range(20))
def test_memory_plan_never_shares_a_slot_between_buffers_alive_at_once(seed):
    """Random programs of allocations, launches and calls (whose results may
    view their arguments): buffers sharing a slot never have overlapping
    lifetimes, counted through every chain of calls (a brute-force closure)."""
    import random

    from tessera.runtime.layouts import Placement
    from tessera.runtime.memory_plan import plan_slots

    rng = random.Random(seed)
    inputs = (0, 1, 2)
    defined, steps, nxt = list(inputs), [], 3
    for _ in range(40):
        reads_ = rng.sample(defined, min(len(defined), rng.randint(1, 3)))
        if rng.random() < 0.6:
            steps += [Alloc(nxt, Placement(torch.float32, (rng.randint(1, 64),), (1,))), Launch(None, (*reads_, nxt))]
        else:
            steps.append(Call(None, tuple(reads_), (nxt,)))
        defined.append(nxt)
        nxt += 1
    outputs = (nxt - 1,)
    plan = plan_slots(steps, inputs, outputs)
    edges: dict[int, set[int]] = {b: {b} for b in defined}
    for st in steps:
        if isinstance(st, Call):
            for r in st.results:
                for a in st.args:
                    edges[r].add(a)
                    edges[a].add(r)
    first = {b: i for i, st in enumerate(steps) for b in ([st.buffer] if isinstance(st, Alloc) else getattr(st, "results", ()))}
    last = {b: i for i, st in enumerate(steps) for b in (st.args if not isinstance(st, Alloc) else (st.buffer,))}

    def group(b):
        seen, todo = {b}, [b]
        while todo:
            for y in edges[todo.pop()] - seen:
                seen.add(y)
                todo.append(y)
        return seen

    def span(b):
        g = group(b)
        return min(first[x] for x in g if x in first), max(last.get(x, first.get(x, -1)) for x in g)
    assert not any(x in plan.slot_of for o in outputs for x in group(o))
    planned = sorted(plan.slot_of)
    for i, a in enumerate(planned):
        for b in planned[i + 1:]:
            if plan.slot_of[a] == plan.slot_of[b]:
                (lo_a, hi_a), (lo_b, hi_b) = span(a), span(b)
                assert hi_a < lo_b or hi_b < lo_a, (a, b, span(a), span(b))


def test_memory_plan_gives_a_slot_new_memory_while_something_else_holds_it(scale_module):
    """A library that keeps a planned buffer (as a weight cache keeps its
    source) keeps that memory to itself: the slot moves to a new block, and
    what it holds is never overwritten by a later buffer or run."""
    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    held = []
    steps = [Alloc(2, nhwc), Launch(k, (0, 1, 2)), Call(lambda t: (held.append(t), t.sum())[1], (2,), (9,)),
             Alloc(3, nhwc), Launch(k, (2, 1, 3)), Alloc(4, nhwc), Launch(k, (3, 1, 4)), Alloc(6, nhwc), Launch(k, (4, 1, 6))]
    prog = Program(steps=steps, inputs=(0, 1), outputs=(6,))
    assert prog._memory.plan.slot_of[2] == prog._memory.plan.slot_of[4]  # 4 is made after 2's last read
    x, s, _ = scale_inputs()
    x2, s2, _ = scale_inputs()
    for i, (xi, si) in enumerate(((x, s), (x2, s2), (x, s), (x2, s2))):
        prog.run(xi, si)  # buffer 4 is written in the run that handed buffer 2 out: not where it is held
        for t, (xh, sh) in zip(held, ((x, s), (x2, s2), (x, s), (x2, s2))[:i + 1]):
            torch.testing.assert_close(t, scale_reference(xh, sh), rtol=1e-5, atol=1e-5)

    ext = []  # the interpreter checks every slot (a straight-line function pins those of launches alone: below)
    chain = Program(steps=_chain(k, nhwc, [Call(torch.relu, (4,), (5,))]), inputs=(0, 1), outputs=(5,),
                    straight_line=False)
    assert 2 in chain._memory.plan.slot_of
    memory = chain._memory
    chain.run(x, s)
    ext.append(memory.views[2])  # someone outside holds buffer 2's tensor
    kept = ext[0].clone()
    (y,) = chain.run(x2, s2)
    torch.testing.assert_close(ext[0], kept, rtol=0, atol=0)
    assert memory.views[2].data_ptr() != ext[0].data_ptr()
    want = x2
    for _ in range(3):
        want = scale_reference(want, s2)
    torch.testing.assert_close(y, want.relu(), rtol=1e-4, atol=1e-4)


def test_a_straight_line_function_pins_the_slots_only_launches_touch(scale_module):
    """Planned buffers that only kernel launches read and write (addresses alone: nothing
    outside can hold them) are the straight-line function's constants, view and address;
    a slot a call reads stays checked on every run. Results are right run after run, and
    after the memory plan lets its blocks go (the function keeps its own)."""
    from tessera.runtime.runner import pinned_views, straight_line

    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    steps = [Alloc(2, nhwc), Launch(k, (0, 1, 2)), Alloc(3, nhwc), Launch(k, (2, 1, 3)),
             Call(lambda t: t.sum(), (3,), (9,)), Alloc(4, nhwc), Launch(k, (3, 1, 4)), Alloc(6, nhwc),
             Launch(k, (4, 1, 6))]
    prog = Program(steps=steps, inputs=(0, 1), outputs=(6,))
    x, s, _ = scale_inputs()
    want = x
    for _ in range(4):
        want = scale_reference(want, s)
    for _ in range(3):
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)
    slot_of = prog._memory.plan.slot_of
    pinned = pinned_views(prog)
    assert 2 in slot_of and 3 in slot_of and slot_of[3] not in {slot_of[b] for b in pinned}  # 3 is read by a call
    assert pinned and all(pinned[b] is prog._memory.views[b] for b in pinned)
    source = straight_line(prog, native=False).source  # each launch a call of its kernel, addresses as literals
    assert all(f"b{b}.data_ptr()" not in source and str(v.data_ptr()) in source for b, v in pinned.items())
    assert "b3.data_ptr()" in source
    native = prog._straight_line(False).source  # the launches in native segments: pinned addresses in their code
    assert all(f"b{b}.data_ptr()" not in native for b in pinned) and "b3.data_ptr()" in native
    prog._memory.release()
    for _ in range(2):
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)


def test_program_checks_launches_again_when_its_inputs_change(scale_module, monkeypatch):
    """Launches skip the signature check only on inputs like those of the last
    checked run: new strides are checked (and refused), the same ones are not."""
    k = scale_module.kernel("scale")
    nhwc = placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))
    prog = Program(steps=[Alloc(2, nhwc), Launch(k, (0, 1, 2))], inputs=(0, 1), outputs=(2,))
    checks = []
    check = type(k).check
    monkeypatch.setattr(type(k), "check", lambda self, ts: (checks.append(1), check(self, ts)))
    x, s, _ = scale_inputs()
    for _ in range(3):
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, scale_reference(x, s), rtol=1e-5, atol=1e-5)
    assert len(checks) == 1
    with pytest.raises(SignatureMismatch, match="strides"):
        prog.run(x.contiguous(), s)
    assert len(checks) == 2

    # An input only a library call reads is not part of the launches' signature.
    lib = Program(steps=[Alloc(3, nhwc), Launch(k, (0, 1, 3)), Call(lambda a, b: a + b, (3, 2), (4,))],
                  inputs=(0, 1, 2), outputs=(4,))
    checks.clear()
    for other in (x, x.contiguous(), x):
        (y,) = lib.run(x, s, other)
        torch.testing.assert_close(y, scale_reference(x, s) + other, rtol=1e-5, atol=1e-5)
    assert len(checks) == 1


def test_program_errors(scale_module):
    k = scale_module.kernel("scale")
    with pytest.raises(ProgramError, match="before it is defined"):
        Program(steps=[Launch(k, (0, 1, 2))], inputs=(0, 1), outputs=(2,))
    with pytest.raises(ProgramError, match="never defined"):
        Program(steps=[], inputs=(0,), outputs=(1,))
    with pytest.raises(ProgramError, match="redefines"):
        Program(steps=[Call(torch.neg, (0,), (0,))], inputs=(0,), outputs=(0,))
    prog = Program(steps=[Call(lambda a: (a, a), (0,), (1,))], inputs=(0,), outputs=(1,))
    with pytest.raises(ProgramError, match="returned 2"):
        prog.run(torch.ones(1))
    with pytest.raises(ProgramError, match="takes 1 inputs"):
        prog.run()
