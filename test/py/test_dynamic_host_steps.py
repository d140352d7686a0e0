"""Host steps of programs at dynamic sizes: a reshape into a product of sizes
stays on the host without a layout fix-up, and tessera's conv at a dynamic size
checks its operands once per placement."""

from __future__ import annotations

import pytest
import torch
from program_capture import programs_run

from tessera.compiler.host_steps import PlacedCall
from tessera.compiler.targets.x86.conv.sized import SizedConv
from tessera.compiler.targets.x86.conv_choice import host_isa
from tessera.runtime.errors import SignatureMismatch
from tessera.runtime.kernel import Kernel
from tessera.runtime.program import Call, Launch, Program, SizedAlloc


class _Attention(torch.nn.Module):
    """WAN's attention block in small: a 1x1 conv, then ``reshape(b, 1, 3c, h*w)``."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Conv2d(16, 48, 3, padding=1)

    def forward(self, x):
        b, c, h, w = x.shape
        qkv = self.qkv(x).reshape(b, 1, 3 * c, -1).permute(0, 1, 3, 2).contiguous()
        q, k, v = qkv.chunk(3, dim=-1)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).squeeze(1).permute(0, 2, 1).reshape(b, c, h, w)


@pytest.mark.parametrize("freezing", [False, True])
def test_a_reshape_into_a_product_of_sizes_needs_no_fixup(freezing):
    torch.manual_seed(0)
    model = _Attention().eval()
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", dynamic=True, options={"freezing": freezing})
        for size in (8, 12, 10, 12):
            x = torch.randn(1, 16, size, size)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        programs = programs_run(compiled, torch.randn(1, 16, 12, 12))
    calls = [s.fn for p in programs for s in p.steps if isinstance(s, Call) and isinstance(s.fn, PlacedCall)]
    assert any(c.__name__ == "tsr.reshape" for c in calls)  # h * w: sized on the host
    assert [f for c in calls for f in c.fixups] == []


def test_tessera_conv_checks_operands_when_their_placement_changes():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1, stride=2), torch.nn.SiLU()).eval()
    x = torch.randn(1, 32, 12, 12)
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", dynamic=True, options={"freezing": True})
        compiled(torch.randn(1, 32, 10, 10))
        for _ in range(2):
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        programs = programs_run(compiled, x)
    convs = [s for p in programs for s in p.steps if isinstance(s, Launch) and isinstance(s.kernel, SizedConv)]
    if not convs:
        pytest.skip("this host's conv is the library's, not tessera's")
    conv = convs[0].kernel
    sized = conv._kernels[tuple(x.shape)]
    assert sized.checked is not None  # checked once, then trusted while placements repeat
    operands = [torch.randn(s, dtype=d).as_strided(s, st) for d, s, st, _ in sized.checked]
    checks = []
    original = Kernel.check
    Kernel.check = lambda self, tensors: (checks.append(self), original(self, tensors))[1]
    try:
        conv(*operands)  # placed as checked: trusted, not checked again
        assert checks == []
        x0 = operands[0]
        wrong = x0.contiguous() if not x0.is_contiguous() else x0.contiguous(memory_format=torch.channels_last)
        with pytest.raises(SignatureMismatch):
            conv(wrong, *operands[1:])
        assert checks == [sized.kernel]
    finally:
        Kernel.check = original


def test_tessera_conv_of_a_repeated_size_writes_last_runs_output():
    """The output of tessera's conv at dynamic sizes is the program's allocation:
    kept while the sizes repeat and nothing outside holds it, new otherwise."""
    if host_isa() is None:
        pytest.skip("this host has no conv kernel path (AVX2 and FMA)")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.SiLU(),
                                torch.nn.Conv2d(32, 32, 3, padding=1)).eval()
    with torch.no_grad():
        compiled = torch.compile(model, backend="tessera", dynamic=True, options={"freezing": True})
        compiled(torch.randn(1, 32, 10, 10))
        x = torch.randn(1, 32, 12, 12)
        programs = programs_run(compiled, x)
        steps = [s for p in programs for s in p.steps]
        convs = [s for s in steps if isinstance(s, Launch) and isinstance(s.kernel, SizedConv)]
        assert convs  # the host has a conv kernel path (checked at the top)
        sized = {s.buffer for s in steps if isinstance(s, SizedAlloc)}
        assert all(s.args[-1] in sized for s in convs)  # each output allocated by the program
        program = next(p for p in programs if any(s in p.steps for s in convs))
        inner = convs[0].args[-1]
        assert inner not in program.outputs

        def kept(p: Program) -> torch.Tensor | None:  # the conv output's tensor a bound program keeps
            planned = p._memory is not None and inner in p._memory.plan.slot_of
            return p._memory.views.get(inner) if planned else p._kept.get(inner)

        for size in (12, 12, 9, 12):
            y = torch.randn(1, 32, size, size)
            torch.testing.assert_close(compiled(y), model(y), rtol=1e-4, atol=1e-4)
        at_12 = [b for b in program._bound.values() if (t := kept(b)) is not None and tuple(t.shape) == (1, 32, 12, 12)]
        del t  # held here, the buffer would be the caller's: the program would take new memory
        assert len(at_12) == 1 and len(program._bound) == 3  # a program bound to each size, keeping its buffers
        before = kept(at_12[0]).data_ptr()
        compiled(x)
        assert kept(at_12[0]).data_ptr() == before  # the same memory, written again


class _TrainingNorm(torch.nn.Module):
    """BatchNorm in training: its unbiased variance divides by ``n - 1`` of symbolic ``n``."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)

    def forward(self, x):
        return self.norm(self.conv(x)).flatten(1)


def test_a_program_bound_to_sizes_takes_its_size_arithmetic_as_constants():
    """``tsr.dim``, size arithmetic and sizes made 0-d tensors run in the dynamic program;
    the program bound to one run's sizes has their values as constants and drops the ones
    nothing reads. Every size gets eager's values, also back at a size bound before."""
    from tessera.runtime.size_binding import SizeConstant

    torch.manual_seed(0)
    model = _TrainingNorm().train()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"strict": True})
    for shape in ((2, 8, 6, 5), (3, 8, 9, 7), (2, 8, 6, 5), (4, 8, 3, 3)):
        x = torch.randn(shape)
        programs = programs_run(compiled, x)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    forward = programs[0]
    assert any(getattr(s.fn, "of_sizes", False) and s.fn.__name__ == "arith.muli"
               for s in forward.steps if isinstance(s, Call))
    bound = list(forward._bound.values())
    assert bound
    for program in bound:
        size_calls = [s for s in program.steps if isinstance(s, Call) and getattr(s.fn, "of_sizes", False)]
        assert size_calls and all(isinstance(s.fn, SizeConstant) for s in size_calls)
        assert len(size_calls) < sum(getattr(s, "fn", None) is not None and getattr(s.fn, "of_sizes", False)
                                     for s in forward.steps)
