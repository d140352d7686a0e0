"""The callables of a host program's ``Call`` steps (``host_program.py``): plain
objects holding what they read of their op, with no IR, so that a program
pickles whole (the graph cache stores it: ``host_plan.py``) and runs in a
process that never loads xDSL.

    Constant(t)()                                  # a dense tsr.constant
    PlacedCall(fn, 3, {2: 1.0}, placements, ...)   # fn's results stored in the layouts their types name
    View("permute", (0, 2, 3, 1))(x)               # the reference semantics of an op left on the host
    AtenCall("aten.max_pool2d.default", (Operand(0), [3, 3]), {}, True)(x)
    IrOp(text, "cpu")(x, ...)                      # any other op: its IR, parsed on first use

and :class:`HostProgram`, the program they are steps of.

``interpreter.impls.BINDINGS`` makes them from ops: the interpreter runs the
same callables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from tessera.dialects.polyphase import PolyphaseDim, polyphase_weight
from tessera.runtime import layouts
from tessera.runtime.errors import SizesChanged
from tessera.runtime.layouts import Placement
from tessera.runtime.program import Program

from .report import GraphReport
from .weight_cache import PerVersion


@dataclass
class HostProgram:
    """A graph's program (``host_program.build_host_program``), what it reports, and
    the placements of its inputs and outputs (None: not a tensor)."""

    program: Program
    inputs: tuple[Placement | None, ...]
    report: GraphReport = field(default_factory=lambda: GraphReport("forward"))
    layout_fixups: list[str] = field(default_factory=list)
    outputs: tuple[Placement | None, ...] = ()

    def __call__(self, *tensors: torch.Tensor) -> list[torch.Tensor]:
        return self.program.run(*tensors)


class Constant:
    """A dense constant's tensor, built once when the program is built, or a
    scalar (``arith.constant``: a size a reshape reads)."""

    __name__ = "tsr.constant"

    def __init__(self, value: torch.Tensor):
        self.value = value

    def __call__(self) -> Any:
        return self.value


@dataclass(frozen=True)
class SizeOf:
    """``tsr.dim``: a tensor's size along ``dim`` (a Python int)."""

    dim: int

    def __call__(self, x: torch.Tensor) -> int:
        return int(x.shape[self.dim])


def fresh_copy(t: torch.Tensor) -> torch.Tensor:
    """A returned constant, copied on each run: a caller that writes to its
    result does not change the next one."""
    return t.clone()


class PlacedCall:
    """``fn`` on an op's operands (the scalar ones bound in place: ``fixed``, by
    position among ``arity``), each result stored in the placement its type names
    (None: not a tensor). A result in another layout is copied into its own and
    noted in ``fixups`` (``HostProgram.layout_fixups``: the layout passes should leave none)."""

    def __init__(self, fn: Callable, name: str, arity: int, fixed: dict[int, Any],
                 placements: Sequence[Placement | None], where: str, fixups: list[str], of_sizes: bool = False):
        self.fn, self.__name__, self.arity, self.fixed = fn, name, arity, fixed
        self.placements, self.where, self.fixups = tuple(placements), where, fixups
        self.of_sizes = of_sizes
        """Its results follow from its arguments' sizes alone (``runtime/size_binding.py``)."""

    def __call__(self, *tensors: Any) -> list:
        if self.fixed:
            it = iter(tensors)
            tensors = tuple(self.fixed[i] if i in self.fixed else next(it) for i in range(self.arity))
        out = self.fn(*tensors)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        placed = []
        for j, (t, placement) in enumerate(zip(outs, self.placements)):
            if placement is not None and not placement.holds(t):
                t = self._placed(j, t)
            placed.append(t)
        return placed

    def _placed(self, j: int, t: torch.Tensor) -> torch.Tensor:
        """Result ``j``, ``t``, which its placement does not hold, copied into it."""
        return self._fixed_up(t, self.placements[j])

    def _fixed_up(self, t: torch.Tensor, placement: Any) -> torch.Tensor:
        self.fixups.append(self.where)
        return layouts.in_layout(t, placement)

    def bound_to(self, args: Sequence[Placement | None], results: Sequence[Placement | None],
                 guarded: set[int]) -> SizedCall:
        """This call in a program bound to one run's sizes (``runtime/size_binding.py``),
        where its arguments and results were placed as ``args`` and ``results``."""
        at_sizes = getattr(self.fn, "at_sizes", None)
        return SizedCall(self, self.fn if at_sizes is None else at_sizes(args), results, guarded)


class SizedCall(PlacedCall):
    """A :class:`PlacedCall` of a program bound to one run's sizes: each result's
    placement is the static one it had in that run (one comparison of strides on
    each call), and ``fn`` is the function at those sizes (a library conv decides
    per input size once: ``OneDnnConv.at_sizes``).

        PlacedCall(conv, ..., [OrderPlacement(f32, (1, 64, -1, -1), (0, 2, 3, 1))])
          -> SizedCall(conv at 1x64x8x8, ..., [Placement(f32, (1, 64, 8, 8), (4096, 1, 512, 64))])

    A result of other sizes is one whose sizes depend on more than the inputs'
    placements: a ``guarded`` one (a bound size came from it) raises
    :class:`SizesChanged`; another is placed as the call's own type says."""

    def __init__(self, call: PlacedCall, fn: Callable, results: Sequence[Placement | None], guarded: set[int]):
        placements = [r if p is not None or j in guarded else None
                      for j, (p, r) in enumerate(zip(call.placements, results))]
        super().__init__(fn, call.__name__, call.arity, call.fixed, placements, call.where, call.fixups)
        self.unbound, self.guarded = call.placements, guarded

    def _placed(self, j: int, t: torch.Tensor) -> torch.Tensor:
        bound = cast(Placement, self.placements[j])  # placed: not None
        unbound = self.unbound[j]
        if j in self.guarded and (t.shape != bound.shape or unbound is None):
            raise SizesChanged(f"{self.where} returned {tuple(t.shape)}, bound to {bound.shape}")
        if unbound is not None and t.shape != bound.shape:  # (unbound None: a guarded result)
            return t if unbound.holds(t) else self._fixed_up(t, unbound)
        return self._fixed_up(t, bound)


class PreparedWeights:
    """The steps that prepare weights from parameters alone (``weight_preparation``)
    as one step: with ``freezing`` run again only when those parameters change
    (:class:`PerVersion`), else on every call."""

    __name__ = "prepare_weights"

    def __init__(self, program: Program, freezing: bool):
        self.program, self.freezing = program, freezing
        self._cached = PerVersion(program.run, freezing)

    def __call__(self, *params: torch.Tensor) -> list[torch.Tensor]:
        return self._cached(*params)

    def __reduce__(self) -> tuple:
        return PreparedWeights, (self.program, self.freezing)  # stored without the prepared values


# -- the reference semantics of ops left on the host ---------------------------------------
@dataclass(frozen=True)
class Torch:
    """An op that is one torch function of its operands (``tsr.matmul``: ``torch.mm``)."""

    fn: Callable[..., Any]

    def __call__(self, *xs: Any) -> Any:
        return self.fn(*xs)


def identity(x: torch.Tensor) -> torch.Tensor:
    """``tsr.convert``/``tsr.relayout``: the result's placement does the work."""
    return x


def scaled_int_mm(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
                  bias: torch.Tensor | None = None) -> torch.Tensor:
    """``tsr.scaled_int_mm``: the exact int32 product, then its float32 epilogue."""
    y = torch._int_mm(a, b).to(torch.float32) * a_scale[:, None] * b_scale[None, :]
    return y if bias is None else y + bias


@dataclass(frozen=True)
class View:
    """A view op as the tensor method it is: ``tsr.permute`` (``permute``, its dims),
    ``tsr.reshape`` (``reshape``, the result's shape, ``None`` for each dynamic
    size, given after the tensor), ``tsr.expand`` (``expand``)."""

    method: str
    arg: tuple[int | None, ...]

    def __call__(self, x: torch.Tensor, *sizes: int) -> torch.Tensor:
        if not sizes:
            return getattr(x, self.method)(self.arg)
        given = iter(sizes)
        return getattr(x, self.method)(tuple(next(given) if n is None else n for n in self.arg))


@dataclass(frozen=True)
class Slice:
    dim: int
    start: int
    end: int
    step: int

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        index = [slice(None)] * x.dim()
        index[self.dim] = slice(self.start, self.end, self.step)
        return x[tuple(index)]


@dataclass(frozen=True)
class Concat:
    dim: int

    def __call__(self, *xs: torch.Tensor) -> torch.Tensor:
        return torch.cat(xs, dim=self.dim)


@dataclass(frozen=True)
class PolyphaseWeight:
    """``tsr.polyphase_weight``: its dims' (scale, kernel, padding)."""

    dims: tuple[PolyphaseDim, ...]

    def __call__(self, w: torch.Tensor) -> torch.Tensor:
        return polyphase_weight(self.dims, w)


@dataclass(frozen=True)
class Operand:
    """Where a ``tsr.aten_call``'s argument is its ``index``-th operand (``#tsr.operand<i>``)."""

    index: int


def callee_function(callee: str) -> Any:
    """A ``tsr.aten_call``'s callee as what runs it: ``"aten.add.Tensor"`` ->
    ``torch.ops.aten.add.Tensor`` (an OpOverload); ``"tessera.…"`` -> tessera's
    own host function, called directly, not through the dispatcher."""
    namespace, op, overload = callee.split(".")
    if namespace == "tessera":
        from .conv_input_grad import HOST_FUNCTIONS as INPUT_GRAD
        from .conv_weight_grad import HOST_FUNCTIONS as WEIGHT_GRAD
        from .depthwise_backward import HOST_FUNCTIONS as DEPTHWISE

        return {**INPUT_GRAD, **WEIGHT_GRAD, **DEPTHWISE}[callee]
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


class AtenCall:
    """``tsr.aten_call``: the ATen op named ``callee`` on its decoded arguments, the
    operands put in place of each :class:`Operand`; ``single``: one result (else a tuple)."""

    def __init__(self, callee: str, args: Any, kwargs: dict[str, Any], single: bool):
        self.callee, self.args, self.kwargs, self.single = callee, args, kwargs, single
        self.__name__ = callee

    @functools.cached_property
    def _fn(self) -> Any:
        return callee_function(self.callee)

    def __call__(self, *operands: Any) -> Any:
        out = self._fn(*_filled(self.args, operands), **{k: _filled(v, operands) for k, v in self.kwargs.items()})
        return out if self.single else tuple(out)

    def __reduce__(self) -> tuple:
        return AtenCall, (self.callee, self.args, self.kwargs, self.single)  # an OpOverload does not pickle


def _filled(value: Any, operands: Sequence[Any]) -> Any:
    if isinstance(value, Operand):
        return operands[value.index]
    if isinstance(value, list):
        return [_filled(v, operands) for v in value]
    return value


class IrOp:
    """Any other op: its reference semantics (``interpreter.impls``) on the op
    itself, kept as the text of a one-op function and parsed on first use (the
    only step that loads the IR when a program comes from the graph cache)."""

    def __init__(self, text: str, device: str):
        self.text, self.device = text, device
        self.__name__ = "tsr op"

    @functools.cached_property
    def _run(self) -> Callable[..., Any]:
        import types

        from .interpreter import find_function
        from .interpreter.impls import IMPLS
        from .ir_io import parse_module

        fn = find_function(parse_module(self.text, "<host op>"), "op")
        op = fn.body.block.ops.first
        if op is None:
            raise ValueError("a stored host op has no op")
        env = types.SimpleNamespace(device=torch.device(self.device))
        impl = IMPLS[type(op)]
        return lambda *xs: impl(op, env, *xs)

    def __call__(self, *xs: Any) -> Any:
        return self._run(*xs)

    def __reduce__(self) -> tuple:
        return IrOp, (self.text, self.device)
