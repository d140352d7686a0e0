"""The straight-line runner (``runtime/runner.py``): a program's steady-state
run as one generated function gives what the interpreter gives, bit for bit,
on real compiled programs (static and dynamic sizes, frozen or not, kernels,
library calls, sized allocations), and keeps its buffers as the interpreter does."""

from __future__ import annotations

import re
import weakref

import pytest
import torch
from conftest import example
from kernel_testing import load
from test_runtime import scale_inputs, scale_kernel, scale_reference
from xdsl.dialects.builtin import TensorType, f32

from tessera.compiler.placements import placement_of
from tessera.dialects.tsr.layout import LayoutAttr
from tessera.runtime import Alloc, Call, Launch, Program, openmp
from tessera.runtime.errors import LoadError, ProgramError
from tessera.runtime.layouts import SizedLayout
from tessera.runtime.native import KernelCall, Pointer, Segments, address_of
from tessera.runtime.openmp import Trampolines
from tessera.runtime.program import SizedAlloc
from tessera.runtime.runner import straight_line


@pytest.fixture
def compared(monkeypatch):
    """Every straight-line run is checked against the interpreter's run of the same
    inputs (fresh buffers, nothing kept): the programs it ran are listed."""
    ran: list[Program] = []
    made = Program._straight_line

    def checked_runner(self, timed):
        run = made(self, timed)

        def both(*tensors):
            got = run(*tensors)
            want = self._run(tensors, None, True, False, None)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                if isinstance(w, torch.Tensor):
                    assert type(g) is torch.Tensor and g.shape == w.shape and g.stride() == w.stride()
                    assert torch.equal(g.nan_to_num(), w.nan_to_num()), "straight-line run differs"
            ran.append(self)
            return got

        return both

    monkeypatch.setattr(Program, "_straight_line", checked_runner)
    return ran


@pytest.mark.parametrize("name,dynamic,freezing", [
    ("vae2d_block", True, False), ("video_vae_block", True, True), ("resnet_block", False, False),
    ("mobilenet_block", True, False), ("unet_block", False, True), ("mlp", True, False),
])
def test_steady_state_runs_are_the_interpreters(compared, monkeypatch, name, dynamic, freezing):
    import tessera.runtime.program as program_module

    bound: list[Program] = []  # what bind_sizes made
    bind = program_module.bind_sizes
    monkeypatch.setattr(program_module, "bind_sizes", lambda p, sizes: bound.append(bind(p, sizes)) or bound[-1])
    model, (x,) = example(name)
    compiled = torch.compile(model, backend="tessera", dynamic=dynamic, options={"strict": True, "freezing": freezing})
    sizes = [tuple(x.shape)]
    if dynamic:
        sizes.append((x.shape[0] + 1, *x.shape[1:]))
    with torch.no_grad():
        for shape in sizes * 2:  # a size again: its launches are trusted, its buffers kept
            xs = torch.randn(shape)
            for _ in range(2):
                got = compiled(xs)
            torch.testing.assert_close(got, model(xs), rtol=1e-4, atol=1e-4)
    assert compared, "no run took the straight-line function"
    if dynamic:  # the steady state of a dynamic program is its program bound to the run's sizes (bind_sizes):
        # static allocations, no kernel left taking its sizes at run time
        assert any(p in bound for p in compared)
        assert not any(isinstance(s, SizedAlloc) or (isinstance(s, Launch) and getattr(s.kernel, "dynamic", False))
                       for p in compared for s in p.steps)


@pytest.fixture(scope="module")
def scale_module():
    return load(scale_kernel())


def _nhwc():
    return placement_of(TensorType(f32, [2, 8, 5, 8], LayoutAttr((0, 2, 3, 1))))


def test_the_function_reads_as_the_steps(scale_module):
    k = scale_module.kernel("scale")
    prog = Program(steps=[Alloc(2, _nhwc()), Launch(k, (0, 1, 2)), Call(torch.relu, (2,), (3,))],
                   inputs=(0, 1), outputs=(3,))
    run = straight_line(prog, native=False)
    lines = run.source.splitlines()
    assert lines[0] == "def run(b0, b1):"
    assert any("b0.data_ptr(), b1.data_ptr(), b2.data_ptr(), 0, " in line for line in lines)
    assert "del b0, b1" in run.source and "del b2" in run.source and lines[-1] == "    return [b3]"
    native = straight_line(prog).source.splitlines()  # the launch as a native segment: its addresses written first
    assert [line.split(" = ")[1] for line in native if "data_ptr" in line] == [f"b{b}.data_ptr()" for b in (0, 1, 2)]
    segment = next(i for i, line in enumerate(native) if re.fullmatch(r" +N\d+\(\)", line))
    assert native.index("    del b0, b1") > segment  # inputs outlive the segment's call
    x, s, _ = scale_inputs()
    prog.run(x, s)  # checked by the interpreter; the next runs are the function's
    refs = []
    for _ in range(3):
        (y,) = prog.run(x, s)
        refs.append(weakref.ref(y))
        torch.testing.assert_close(y, scale_reference(x, s).relu(), rtol=1e-5, atol=1e-5)
    assert prog._runner[0] is not None


def test_chained_launches_run_as_one_native_segment(scale_module):
    """Launches that only pinned and planned buffers join run as one native call, in
    order (each reads what the one before wrote); a call ends the segment."""
    k = scale_module.kernel("scale")
    steps = [Alloc(2, _nhwc()), Launch(k, (0, 1, 2)), Alloc(3, _nhwc()), Launch(k, (2, 1, 3)),
             Alloc(4, _nhwc()), Launch(k, (3, 1, 4)), Call(torch.neg, (4,), (5,)),
             Alloc(6, _nhwc()), Launch(k, (5, 1, 6))]
    prog = Program(steps=steps, inputs=(0, 1), outputs=(6,))
    x, s, _ = scale_inputs()
    want = scale_reference(-scale_reference(scale_reference(scale_reference(x, s), s), s), s)
    for _ in range(3):  # checked by the interpreter, then the function's
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-4)
    source = prog._runner[0].source
    assert len(re.findall(r"N\d+\(\)", source)) == 2 and source.count(".data_ptr()") < 8, source


def test_a_segment_hands_out_slot_views_as_the_interpreter_does(scale_module, monkeypatch):
    """A call's result viewing a slot (3 views 2's memory) is freed only after the
    segment has run: a later view of that slot (5) ends the segment first, or the
    slot would look held and take new memory on every run."""
    from tessera.runtime.memory_plan import SlotMemory

    k = scale_module.kernel("scale")
    steps = [Alloc(2, _nhwc()), Launch(k, (0, 1, 2)), Call(lambda t: t.view(t.shape), (2,), (3,)),
             Alloc(4, _nhwc()), Launch(k, (3, 1, 4)), Alloc(5, _nhwc()), Launch(k, (4, 1, 5)),
             Alloc(6, _nhwc()), Launch(k, (5, 1, 6)), Call(torch.neg, (6,), (7,))]
    prog = Program(steps=steps, inputs=(0, 1), outputs=(7,))
    slot_of = prog._memory.plan.slot_of
    assert slot_of[5] == slot_of[2]
    x, s, _ = scale_inputs()
    want = x
    for _ in range(4):
        want = scale_reference(want, s)
    for _ in range(2):
        prog.run(x, s)
    views = []
    view = SlotMemory._view
    monkeypatch.setattr(SlotMemory, "_view", lambda self, b, slot: views.append(b) or view(self, b, slot))
    for _ in range(3):
        (y,) = prog.run(x, s)
        torch.testing.assert_close(y, -want, rtol=1e-4, atol=1e-4)
    assert views == [], "a slot's kept view was replaced in the steady state"


def test_without_native_code_each_launch_runs_on_its_own(scale_module, monkeypatch):
    def fails(self):
        raise LoadError("no JIT here")

    monkeypatch.setattr(Segments, "compile", fails)
    k = scale_module.kernel("scale")
    prog = Program(steps=[Alloc(2, _nhwc()), Launch(k, (0, 1, 2)), Alloc(3, _nhwc()), Launch(k, (2, 1, 3))],
                   inputs=(0, 1), outputs=(3,))
    x, s, _ = scale_inputs()
    run = straight_line(prog)
    assert not re.search(r"N\d+\(\)", run.source)
    prog.run(x, s)
    (y,) = run(x, s)
    torch.testing.assert_close(y, scale_reference(scale_reference(x, s), s), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_segment_passes_constants_and_pointers_in_order(scale_module, threads):
    """Launches of a segment run in order, each on its addresses: constants of the code
    or the pointer array's; a threaded one through its OpenMP trampoline."""
    serial = scale_module.kernel("scale").serial
    if threads > 1 and not openmp.available():
        pytest.skip("no libgomp in this process")
    trampolines = Trampolines([(address_of(serial), 3)])  # owns the trampoline's code
    first = KernelCall(address_of(serial) if threads == 1 else trampolines.addresses[0],
                       [Pointer(0), Pointer(1), Pointer(2)], 2 * 8 * 5, threads)
    x, s, y = scale_inputs()
    z = torch.empty_like(y)
    segments = Segments()
    pointers = segments.add([first, KernelCall(address_of(serial), [y.data_ptr(), s.data_ptr(), Pointer(3)], 2 * 8 * 5)])
    (run,) = segments.compile()
    pointers[:] = (x.data_ptr(), s.data_ptr(), y.data_ptr(), z.data_ptr())
    run()
    torch.testing.assert_close(z, scale_reference(scale_reference(x, s), s), rtol=1e-4, atol=1e-4)


def test_sized_allocations_are_kept_while_sizes_repeat(scale_module):
    """A ``SizedAlloc``'s tensor is the last run's when the sizes repeat and no
    one holds it; a new size (or a held tensor) gets a new one."""
    k = scale_module.kernel("scale")
    layout = SizedLayout(torch.float32, ((0, 0, 1, 0, 1), (-1, 0, 0, 8, 1), (0, 2, 1, 0, 1), (0, 3, 1, 0, 1)), (0, 2, 3, 1))
    seen = []
    prog = Program(steps=[SizedAlloc(2, layout, (0,)), Launch(k, (0, 1, 2)),
                          Call(lambda t: (seen.append(t.data_ptr()), t.relu())[1], (2,), (3,))],
                   inputs=(0, 1), outputs=(3,))
    x, s, _ = scale_inputs()
    prog.run(x, s)  # checked, and bound to these sizes: later runs take the bound program
    for run in (prog._straight_line(False), prog.run):  # the function of run-time sizes; the bound one's
        del seen[:]
        for _ in range(3):
            (y,) = run(x, s)
            torch.testing.assert_close(y, scale_reference(x, s).relu(), rtol=1e-5, atol=1e-5)
        assert len(set(seen)) == 1


def test_timed_runs_report_every_step(scale_module):
    k = scale_module.kernel("scale")
    steps = [Alloc(2, _nhwc()), Launch(k, (0, 1, 2)), Call(torch.relu, (2,), (3,))]
    prog = Program(steps=steps, inputs=(0, 1), outputs=(3,))
    x, s, _ = scale_inputs()
    prog.run(x, s)
    timed = []
    prog.run(x, s, on_step=lambda step, seconds: timed.append((step, seconds)))
    assert [t[0] for t in timed] == steps and all(t[1] >= 0 for t in timed)
    assert prog._runner[1] is not None and prog._runner[0] is None


def test_a_call_returning_the_wrong_count_is_a_program_error():
    prog = Program(steps=[Call(lambda a: (a, a), (0,), (1,))], inputs=(0,), outputs=(1,))
    with pytest.raises(ProgramError, match="returned 2 tensors, expected 1"):
        straight_line(prog)(torch.ones(1))
    pair = Program(steps=[Call(lambda a: (a, a + 1), (0,), (1, 2))], inputs=(0,), outputs=(2, 1))
    got = straight_line(pair)(torch.ones(1))
    assert [g.item() for g in got] == [2.0, 1.0]


def test_interpreted_when_asked():
    prog = Program(steps=[Call(torch.neg, (0,), (1,))], inputs=(0,), outputs=(1,), straight_line=False)
    for _ in range(3):
        (y,) = prog.run(torch.ones(2))
    assert prog._runner == [None, None] and y.tolist() == [-1.0, -1.0]
