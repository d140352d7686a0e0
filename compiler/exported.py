"""Compiling an exported program: tessera with no Dynamo on the call path.

    compiled = compile_exported(model, (x,))                     # torch.export inside
    compiled = compile_exported(torch.export.export(model, (x,), dynamic_shapes=...))
    y = compiled(x)

``torch.compile`` enters every call through Dynamo, whose guards and frame cost
0.1-1 ms a call whatever the backend (MobileNetV2 with cold caches: 0.93 of its
8.4 ms). An exported program is traced once, ahead of time. Its ATen graph
(tessera's decompositions, the ops tessera keeps whole) is compiled as
torch.compile's forward graph is (``backend.compile_graph``, ``freezing`` unless
the options say otherwise), its parameters, buffers and constants the program's
leading inputs:

    graph(%p_conv_weight, %b_bn_running_mean, ..., %x) -> (%y,)
    compiled(x)  ==  program(conv.weight, bn.running_mean, ..., x)

A call checks its arguments against the exported signature (static sizes and
dtypes here; symbolic sizes by torch.export's own check, with its message) and
runs the program: what an AOTInductor or OpenVINO model pays a call. The
parameters stay the model's tensors: changed in place (``load_state_dict``, an
optimizer step) they are prepared again on the next call, as under
torch.compile; one *replaced* by a new tensor is not seen (the exported program
holds the old one). Inference only: outputs carry no autograd history. A model
torch.export cannot trace is compiled by ``torch.compile`` instead, with a
warning saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._export.utils import _check_input_constraints_for_graph
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree

from .backend import BackendOptions, compile_graph, graph_device
from .decompositions import decomposition_table, keeping_ops_whole
from .errors import TesseraError

log = logging.getLogger("tessera")

_STATE = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
_WRITTEN_BACK = (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)


class ExportError(TesseraError):
    """An exported program tessera cannot run (a training graph, tokens, script objects)."""


class InputMismatch(TesseraError):
    """A call whose arguments are not those the program was exported for."""


def compile_exported(model: torch.nn.Module | ExportedProgram, args: Sequence[Any] = (),
                     kwargs: dict[str, Any] | None = None, *, dynamic_shapes: Any = None,
                     options: dict[str, Any] | None = None) -> Callable[..., Any]:
    """``model`` exported for ``args``/``kwargs`` (``dynamic_shapes`` as
    ``torch.export.export`` takes them) and compiled, or an ``ExportedProgram``
    compiled as it is. ``options`` are torch.compile's tessera options (default
    ``freezing=True``). A model that cannot be exported runs through
    ``torch.compile(model, backend="tessera")`` instead."""
    if isinstance(model, ExportedProgram):
        return CompiledExport(model, options)
    try:
        with keeping_ops_whole():
            program = torch.export.export(model, tuple(args), kwargs, dynamic_shapes=dynamic_shapes)
        return CompiledExport(program, options)
    except ExportError as e:
        reason = e.message
    except Exception as e:  # noqa: BLE001 - torch.export cannot trace it: Dynamo can, graph breaks and all
        reason = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
    log.warning("tessera: %s is compiled by torch.compile, not exported: %s", type(model).__name__, reason)
    return torch.compile(model, backend="tessera", options=_with_freezing(options),
                         dynamic=True if dynamic_shapes is not None else None)


def _with_freezing(options: dict[str, Any] | None) -> dict[str, Any]:
    return {"freezing": True, **(options or {})}


class CompiledExport:
    """An exported program's graph compiled by tessera, called as the model is
    (``compiled(*args, **kwargs)``, outputs in the model's structure)."""

    def __init__(self, program: ExportedProgram, options: dict[str, Any] | None = None):
        with keeping_ops_whole():
            program = program.run_decompositions(decomposition_table())
        signature = program.graph_signature
        self._in_spec, self._out_spec = program.call_spec.in_spec, program.call_spec.out_spec
        placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
        self._args: list[Any] = []
        """The program's inputs, the state filled in; None where a user input goes."""
        self._user_at: list[int] = []
        self._user: list[torch.fx.Node] = []
        written: dict[str, int] = {}
        for spec, node in zip(signature.input_specs, placeholders):
            written[spec.target if spec.kind is InputKind.BUFFER else node.name] = len(self._args)
            if spec.kind is InputKind.USER_INPUT:
                self._user_at.append(len(self._args))
                self._user.append(node)
                self._args.append(None)
            elif spec.kind in _STATE:
                self._args.append(program.state_dict[spec.target] if spec.target in program.state_dict
                                  else program.constants[spec.target])
            else:
                raise ExportError(f"an exported program with {spec.kind.name} inputs cannot be compiled")
        self._outputs = [_output_target(spec, written) for spec in signature.output_specs]
        self._range_constraints = program.range_constraints
        self._static = [_static_expectation(n.meta.get("val")) for n in self._user]
        self._checked_by_export = any(e is None for e in self._static)
        leaves = pytree.tree_structure(((0,) * len(self._user), {}))
        self._positional = self._in_spec == leaves
        """Whether the user inputs are the call's positional arguments as they are."""
        examples = [n.meta.get("val") for n in placeholders]
        self._run = compile_graph(program.graph_module, BackendOptions.from_dict(_with_freezing(options)),
                                  "forward", graph_device(examples), examples)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = args if self._positional and not kwargs else self._flatten(args, kwargs)
        self._check(flat, args, kwargs)
        inputs = self._args.copy()
        for at, x in zip(self._user_at, flat):
            inputs[at] = x
        user = []
        with torch.no_grad():
            for value, target in zip(self._run(inputs), self._outputs):
                if target is None:
                    user.append(value)
                else:  # a buffer or an input the model writes: written back, as eager writes it
                    inputs[target].copy_(value)
        return pytree.tree_unflatten(user, self._out_spec)

    def _flatten(self, args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        flat, spec = pytree.tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise InputMismatch(f"arguments of structure {spec} given to a program exported for {self._in_spec}")
        return flat

    def _check(self, flat: Sequence[Any], args: tuple, kwargs: dict[str, Any]) -> None:
        """Raise :class:`InputMismatch` unless the inputs are of the exported sizes,
        dtypes and devices (or within the exported ranges of symbolic sizes)."""
        if len(flat) != len(self._static):
            raise InputMismatch(f"{len(flat)} inputs given to a program exported for {len(self._static)}")
        for i, (x, expected) in enumerate(zip(flat, self._static)):
            if expected is None:
                continue
            got = _expectation_of(x, expected)
            if got != expected:
                raise InputMismatch(f"input {i}: expected {_describe(expected)}, got {_describe(got)}"
                                    " (export again with dynamic_shapes for other sizes)")
        if self._checked_by_export:
            try:
                _check_input_constraints_for_graph(self._user, pytree.tree_flatten_with_path((args, kwargs))[0],
                                                   self._range_constraints)
            except RuntimeError as e:
                raise InputMismatch(str(e)) from None
            for i, (x, node) in enumerate(zip(flat, self._user)):
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor) and (x.dtype, x.device.type) != (val.dtype, val.device.type):
                    raise InputMismatch(f"input {i}: expected {val.dtype} on {val.device.type}, "
                                        f"got {x.dtype} on {x.device.type}")


def _output_target(spec: Any, written: dict[str, int]) -> int | None:
    """Where an output is written back: None for a user output, else the index of
    the program input it replaces (``written``: buffer and user-input names)."""
    if spec.kind is OutputKind.USER_OUTPUT:
        return None
    if spec.kind not in _WRITTEN_BACK:
        raise ExportError(f"an exported program with {spec.kind.name} outputs cannot be compiled (inference only)")
    return written[spec.target]


def _static_expectation(val: Any) -> tuple | None:
    """What a user input must be, checked on each call; None where export's own
    check decides (a symbolic size)."""
    if isinstance(val, torch.Tensor):
        if any(isinstance(s, torch.SymInt) for s in val.shape):
            return None
        return ("tensor", tuple(val.shape), val.dtype, val.device.type)
    if isinstance(val, torch.SymInt | torch.SymFloat):
        return None
    return ("value", val)


def _expectation_of(x: Any, expected: tuple) -> tuple:
    if expected[0] == "tensor":
        return ("tensor", tuple(x.shape), x.dtype, x.device.type) if isinstance(x, torch.Tensor) else ("value", x)
    return ("value", x)


def _describe(expectation: tuple) -> str:
    if expectation[0] == "tensor":
        _, shape, dtype, device = expectation
        return f"a {'x'.join(map(str, shape)) or 'scalar'} {dtype} tensor on {device}"
    return repr(expectation[1])
