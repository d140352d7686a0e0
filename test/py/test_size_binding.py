"""A program of run-time sizes bound to each size it runs at (``runtime/size_binding.py``):
the bound program is static (allocations of fixed placements, kernels launched with a
fixed grid and dims array), gives the interpreter's results, and gives way to the
program of run-time sizes where a size depends on more than the inputs' placements."""

from __future__ import annotations

import pytest
import torch

from tessera.compiler.backend import build_kernels, host_program_of, load_kernels
from tessera.compiler.host_steps import PlacedCall, SizedCall
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module
from tessera.compiler.stage_io import CompileOptions
from tessera.runtime.kernel import BoundKernel, Kernel
from tessera.runtime.layouts import OrderPlacement, Placement, SizedLayout
from tessera.runtime.program import BOUND_SIZES, Call, Launch, Program, SizedAlloc
from tessera.runtime.errors import SizesChanged
from tessera.runtime.size_binding import SizeConstant

from test_dynamic_kernels import CASES, _entry_types, _inputs

CPU = torch.device("cpu")


def _compiled(text: str):
    module = parse_module(text)
    options = CompileOptions("x86")
    host, artifact = build_kernels(module, options)
    return module, host_program_of(host, load_kernels(artifact, CPU), options, CPU)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_size_runs_its_bound_program_as_the_interpreter(name):
    """Each size twice, in turn, then the first again: a size's first run is checked
    and binds, the next is the bound program's straight-line function, with no
    size read at run time."""
    text, shapes = CASES[name]
    module, host = _compiled(text)
    for k, shape in enumerate([*shapes, shapes[0]]):
        xs = _inputs(_entry_types(module), shape, k)
        want = interpret(module, *xs)
        for _ in range(2):
            for g, w in zip(host(*xs), want):
                assert g.shape == w.shape and g.stride() == w.stride(), (name, shape)
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    bound = list(host.program._bound.values())
    assert len(bound) == len(shapes)
    assert not host.program._kept.keys() - {-1}  # the buffers are the bound programs'
    assert host.program._memory is None or host.program._memory.kept_bytes() == 0
    for p in bound:
        assert not any(isinstance(s, SizedAlloc) for s in p.steps)
        kernels = [s.kernel for s in p.steps if isinstance(s, Launch)]
        assert kernels and all(isinstance(k, BoundKernel) for k in kernels)
        source = p._runner[0].source
        assert ".shape" not in source and "[:] = (" not in source  # sizes and dims arrays are constants


def test_the_most_recent_sizes_stay_bound():
    module, host = _compiled(CASES["norm"][0])
    sizes = [(1, 8, n, n) for n in range(3, 3 + BOUND_SIZES + 2)]
    for k, shape in enumerate(sizes):
        host(*_inputs(_entry_types(module), shape, k))
    bound = host.program._bound  # keyed by the placements of the inputs kernels read: x first
    assert [tuple(key[0][1]) for key in bound] == sizes[-BOUND_SIZES:]


def _rows_by_data(x: torch.Tensor) -> torch.Tensor:
    return x[: int(x[0].item())]


def test_a_size_that_depends_on_data_runs_unbound():
    """A call's result sized by the data: the bound program meets another size and
    says so (its guard), and the placements run on the program of run-time sizes."""
    layout = SizedLayout(torch.float32, ((0, 0, 1, 0, 1),), (0,))
    prog = Program(steps=[Call(_rows_by_data, (0,), (1,)), SizedAlloc(2, layout, (1,)),
                          Call(lambda a, out: a + out.fill_(1.0), (1, 2), (3,))], inputs=(0,), outputs=(3,))
    for rows in (3, 3, 5, 2, 5):
        x = torch.arange(8, dtype=torch.float32)
        x[0] = rows
        (y,) = prog.run(x)
        assert torch.equal(y, x[:rows] + 1)
    assert not prog._bound and prog._unbound == {()}


def _placed(fn, where: str) -> PlacedCall:
    """``fn`` as the host program calls it, its one result dense along its one dynamic dim."""
    return PlacedCall(fn, where, 1, {}, [OrderPlacement(torch.float32, (-1,), (0,))], where, [])


def test_a_placed_call_is_bound_to_its_results_placements():
    """A host call in a bound program checks its results against the static placements
    of the run that bound it (``SizedCall``). Where a bound size came from a result of
    other sizes, it says so and the run is the unbound program's; a result no size
    came from keeps the call's own placement."""
    layout = SizedLayout(torch.float32, ((0, 0, 1, 0, 1),), (0,))
    guarded = Program(steps=[Call(_placed(_rows_by_data, "rows"), (0,), (1,)), SizedAlloc(2, layout, (1,)),
                             Call(lambda a, out: a + out.fill_(1.0), (1, 2), (3,))], inputs=(0,), outputs=(3,))
    free = Program(steps=[Call(_placed(_rows_by_data, "rows"), (0,), (1,)), SizedAlloc(2, layout, (0,)),
                          Call(lambda out: out.fill_(1.0), (2,), (3,))], inputs=(0,), outputs=(1, 3))
    x = torch.arange(8, dtype=torch.float32)
    x[0] = 3
    for prog in (guarded, free):
        prog.run(x)
        (bound,) = prog._bound.values()
        call = bound.steps[0].fn
        assert isinstance(call, SizedCall) and call.placements == (Placement(torch.float32, (3,), (1,)),)
    for rows in (5, 2, 5):
        x[0] = rows
        (y,) = guarded.run(x)
        assert torch.equal(y, x[:rows] + 1)
        got, ones = free.run(x)
        assert torch.equal(got, x[:rows]) and torch.equal(ones, torch.ones(8))
    assert not guarded._bound and guarded._unbound == {()}  # SizesChanged: run unbound since
    assert len(free._bound) == 1  # the same bound program throughout


def test_a_bound_kernel_checks_its_sizes():
    module, host = _compiled(CASES["pad_upsample"][0])
    kernel = next(s.kernel for s in host.program.steps if isinstance(s, Launch))
    assert kernel.dynamic
    launched = []
    kernel.launch = lambda *tensors, chunks=None: (launched.append(tensors), Kernel.launch(kernel, *tensors))
    for k, shape in enumerate([(1, 4, 3, 5), (1, 4, 6, 5)]):  # each size's first run checks its launches
        host(*_inputs(_entry_types(module), shape, k))
    del kernel.launch
    bound = kernel.bind(launched[0])
    bound(*launched[0])
    with pytest.raises(SizesChanged, match=f"@{kernel.name} was bound to other sizes"):
        bound(*launched[1])


class _Rows:
    """A size call (``tsr.dim``'s kind) whose int the program returns, as a training
    forward returns its sizes for the backward."""

    of_sizes = True
    __name__ = "rows"

    def __call__(self, x: torch.Tensor) -> list[int]:
        return [int(x.shape[0])]


def test_a_returned_size_is_a_constant_of_its_bound_program():
    layout = SizedLayout(torch.float32, ((0, 0, 1, 0, 1),), (0,))  # sized as the input
    prog = Program(steps=[Call(_Rows(), (0,), (1,)), SizedAlloc(2, layout, (0,)),
                          Call(lambda x, out: [torch.mul(x, 2, out=out)], (0, 2), (3,))], inputs=(0,), outputs=(1, 3))
    for rows in (3, 3, 5, 5, 3):
        x = torch.randn(rows)
        n, y = prog.run(x)
        assert n == rows and type(n) is int and torch.equal(y, x * 2)
    assert len(prog._bound) == 2
    for bound in prog._bound.values():
        assert any(isinstance(getattr(s, "fn", None), SizeConstant) for s in bound.steps), "the binding's constant"
