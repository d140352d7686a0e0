"""The ``torch.compile`` backend: ``torch.compile(model, backend="tessera")``.

Dynamo's graph goes through AOTAutograd with tessera's decompositions; each
ATen graph (forward, backward) is imported into ``tsr``, verified, run through
the target's graph pipeline, fused, lowered to kernels and compiled; it runs
as a :class:`GraphProgram`: compiled kernels and library calls in order
(``compiler/host_program.py``). The target is the registry's for the inputs'
device (``targets.for_device``): CPU tensors run this host's CPU code (x86,
AArch64), CUDA tensors PTX kernels with cuDNN/cuBLAS through ATen, MPS tensors
Metal kernels with ATen's MPS kernels for library ops. Whatever tessera cannot do degrades, with a
warning, never an error in the user's program: a graph it cannot compile runs
through the reference interpreter (torch calls), and a graph it cannot import
runs as ATen, as captured.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from functorch.compile import make_boxed_func
from torch._dynamo.exc import RestartAnalysis
from torch._subclasses.fake_tensor import unset_fake_temporarily

from tessera.runtime import layouts
from tessera.runtime.cache import CompileCache
from tessera.runtime.layouts import Placement

from . import decompositions, graph_cache, saved_layouts, targets
from .capture import aot_backend
from .codegen.errors import UnknownTarget
from .host_steps import HostProgram
from .pass_pipeline import pass_name, without
from .report import ATEN, COMPILED, INTERPRETER, FallbackError, GraphReport, publish
from .size_specialization import SizeSpecializedGraph, is_symbolic
from .stage_io import CompileOptions

if TYPE_CHECKING:  # the IR is loaded only to compile: a program from the graph cache runs without it
    from xdsl.dialects.builtin import ModuleOp

    from tessera.runtime.artifact import Artifact
    from tessera.runtime.module import Module

log = logging.getLogger("tessera")


@dataclass(frozen=True)
class BackendOptions:
    """Options of ``torch.compile(..., backend="tessera", options={...})``."""

    target: str | None = None
    """A target of the registry (``compilerctl targets``); ``None``: the one of the
    tensors' device (this host's CPU target, ``ptx`` on CUDA, ``metal`` on MPS)."""
    print_ir: bool = False
    """Print each graph's ``tsr`` IR after the graph passes."""
    codegen: bool = True
    """Compile kernels; ``False`` runs each graph through the reference interpreter."""
    features: str | None = None
    """CPU features to generate code for (``+avx2,+fma``), or the GPU's sm (``sm_90``); ``None``: this host's / the device's."""
    disable: tuple[str, ...] = ()
    """Graph or epilogue-fusion passes to leave out (``("fold-upsample-into-conv",)``), to measure what one buys."""
    conv_kernels: bool = True
    """Run convs on tessera's own kernels where the conv cost model prefers them (x86);
    ``False``: every conv on the library (oneDNN), without the fusion passes that shape
    convs for the kernel (the target's ``own_conv_kernel_passes``), to measure what
    the kernels buy."""
    freezing: bool = False
    """Like Inductor's ``freezing``: values computed from weights (packed conv and
    GEMM weights, a folded BatchNorm) are kept while each weight's version
    counter is unchanged. Writes that bypass it (``p.data.mul_(2)``, through
    ``.numpy()``) are then not seen. Default: computed on every call, as eager."""
    dynamic_kernels: bool = True
    """Compile a graph of symbolic sizes once, its kernels taking their sizes at run
    time; ``False``: compile it per concrete size class (static kernels, each size's
    first call compiles)."""
    strict: bool = False
    """Raise :class:`FallbackError` where a graph would run uncompiled (as ATen or
    through the interpreter) instead of falling back."""
    report: bool = False
    """Print each graph's :class:`GraphReport` (what ran as kernels, library calls, ATen) to stderr."""

    def __post_init__(self) -> None:
        if self.target is not None and self.target not in targets.names():
            raise ValueError(f"tessera: unknown target '{self.target}', expected one of {list(targets.names())}")
        object.__setattr__(self, "disable", tuple(self.disable))
        target = self.target_for("cpu")
        optional = [pass_name(p) for p in (*target.graph_pipeline(freezing=True), *target.fusion_pipeline())
                    if p not in ("dce", "fuse-kernels")]
        optional += ["widen-half"] if "widen-half" not in optional else []  # in the pipeline on some CPUs only
        unknown = sorted(set(self.disable) - set(optional))
        if unknown:
            raise ValueError(f"tessera: cannot disable {unknown}: not in the {target.name} pipeline "
                             f"({', '.join(optional)})")

    def target_for(self, device_type: str) -> targets.Target:
        """The target of a graph whose tensors are on ``device_type`` (a device no
        target runs on: this host's CPU target, which then reports it cannot run there)."""
        if self.target is not None:
            return targets.get(self.target)
        try:
            return targets.for_device(device_type)
        except UnknownTarget:
            return targets.host_cpu()

    def pipeline(self, features: str | None = None) -> tuple[str, ...]:
        """The target's graph pipeline (``Target.graph_pipeline(freezing, features)``) without the disabled passes."""
        return without(self.target_for("cpu").graph_pipeline(self.freezing, features), self.disable)

    def compile_options(self, device: torch.device) -> CompileOptions:
        """The options of a graph on ``device``, resolved once: its target, and the
        features to build for (those asked for, else the device's: a CUDA GPU's sm)."""
        target = self.target_for(device.type)
        features = self.features if self.features is not None else target.device_features(device)
        return CompileOptions(target.name, features, self.freezing, self.conv_kernels, self.disable)

    @classmethod
    def from_dict(cls, options: dict[str, Any] | None) -> BackendOptions:
        options = dict(options or {})
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"tessera: unknown options {unknown}, expected some of {sorted(known)}")
        return cls(**options)


class GraphProgram:
    """A compiled ATen graph: call it with the graph's inputs. ``run`` is the
    compiled host program, or the reference interpreter.

    Should a run raise, the call is made again as ATen (``fallback``, the
    captured graph; tessera's kernels and library calls write only buffers of
    their own, so nothing the caller holds has changed). Where that raises
    too, the error is the inputs' (``linalg.inv`` of a singular matrix) and
    reaches the caller; otherwise it was tessera's, and the graph runs as
    ATen from then on, with a warning. Under ``strict`` every error reaches
    the caller."""

    def __init__(self, module: ModuleOp | None, output_is_none: list[bool], run: HostProgram | None = None,
                 fallback: Callable[..., Any] | None = None, strict: bool = False, kind: str = "forward"):
        self.module = module  # None for a program from the graph cache
        self.output_is_none = output_is_none
        self.compiled = run is not None
        self._fallback = fallback
        self._strict = strict
        self._kind = kind
        self._run: Callable[..., list[torch.Tensor]] | None
        self._inputs: Sequence[Placement | None]
        self.output_placements: Sequence[Placement | None]
        """Where the program returns each result that is not None (``saved_layouts``)."""
        if run is not None:
            self._run, self._inputs, self.output_placements = run, run.inputs, run.outputs
        elif module is None:
            raise ValueError("a graph without a compiled program needs its module (the interpreter runs it)")
        else:
            from .host_program import input_placements, output_placements
            from .interpreter import Interpreter

            self._run, self._inputs = Interpreter(module).run, input_placements(module)
            self.output_placements = output_placements(module)
        placed = [(i, p) for i, p in enumerate(self._inputs) if p is not None]
        self._static = tuple((i, p.strides, p.shape, p.dtype) for i, p in placed if isinstance(p, Placement))
        self._sized = tuple((i, p) for i, p in placed if not isinstance(p, Placement))
        static_at = [i for i, *_ in self._static]
        self._of_static: Callable[[Sequence[Any]], Sequence[Any]] | None = (
            operator.itemgetter(*static_at) if 1 < len(static_at) < len(self._inputs) else None)
        """The inputs of static placement, picked from all (None: every input is, or one at most)."""
        self._guard: Any = None if len(static_at) > 1 else False
        """Dynamo's C++ tensor check of the inputs of static placement as the first placed
        call had them, once that call passed the Python check (None until then; False:
        none, the Python check)."""

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor | None]:
        run = self._run
        if run is None and self._fallback is not None:
            return list(self._fallback(*inputs))
        try:
            return self._program(run, inputs)
        except Exception as e:  # noqa: BLE001 - the captured graph still gives eager's answer
            if self._strict or self._fallback is None:
                raise
            outputs = list(self._fallback(*inputs))  # raises too where the error is the inputs' (a singular matrix)
            log.warning("tessera: %s graph failed while running (%s); it runs as ATen from now on",
                        self._kind, _reason(e))
            self._run, self.compiled = None, False
            return outputs

    def _program(self, run: Callable[..., list[torch.Tensor]] | None, inputs) -> list[torch.Tensor | None]:
        if run is None:
            raise FallbackError("the graph runs as ATen and has no captured graph to run")
        # Dynamo guards on strides, so inputs arrive as traced and nothing is copied.
        xs = inputs if self._as_placed(inputs) else [
            layouts.in_layout(x, p) if p is not None and isinstance(x, torch.Tensor) and not p.holds(x) else x
            for x, p in zip(inputs, self._inputs)]
        values = iter(run(*xs))
        return [None if none else next(values) for none in self.output_is_none]


    def _as_placed(self, inputs: Sequence[Any]) -> bool:
        """Every input is already as its placement says (the common case, checked
        on every call: hundreds of parameters). Where every input is of static
        sizes, Dynamo's own C++ check (``TensorGuards``: dtype, device, sizes,
        strides, and what else dispatches differently) of the inputs as a placed
        call had them answers first: 200 tensors 26 us, the Python loop 89 (Xeon,
        session 31: 0.10 of MobileNetV3-small's 2.3 ms a call). It is stricter than
        the placements, so a miss only falls to the loop; where the loop then passes,
        it is given up (inputs that alternate would pay both). A graph of dynamic
        sizes checks its inputs of static placement (its parameters) so too, and
        the others in Python (the WAN decoder at 8x8: 33 -> 10 us a call)."""
        guard, pick = self._guard, self._of_static
        try:
            if not (guard and len(inputs) == len(self._inputs)
                    and guard.check(*(inputs if pick is None else pick(inputs)))):
                for i, strides, shape, dtype in self._static:
                    x = inputs[i]
                    if x.stride() != strides or x.shape != shape or x.dtype != dtype:
                        return False
                if guard is None and len(inputs) == len(self._inputs):
                    self._guard = _tensor_guard(inputs if pick is None else pick(inputs))
                elif guard:
                    self._guard = False
            return not self._sized or all(p.holds(inputs[i]) for i, p in self._sized)
        except (AttributeError, IndexError, TypeError):  # not a tensor, too few: the full check says what to do
            return False


def _tensor_guard(inputs: Sequence[torch.Tensor]) -> Any:
    """Dynamo's C++ check that tensors are as ``inputs`` (``GraphProgram._as_placed``), or False."""
    try:
        from torch._C._dynamo.guards import TensorGuards

        sizes: Any = [list(x.shape) for x in inputs]  # per tensor, per dim (the stub says one list)
        strides: Any = [list(x.stride()) for x in inputs]
        return TensorGuards(*inputs, dynamic_dims_sizes=sizes, dynamic_dims_strides=strides)
    except Exception:  # noqa: BLE001 - a private API of torch's: without it, the Python check
        return False


def graph_device(example_inputs) -> torch.device:
    """Where a graph runs: the device of its first GPU (CUDA, MPS) input, else the CPU."""
    return next((x.device for x in example_inputs if isinstance(x, torch.Tensor) and x.device.type != "cpu"),
                torch.device("cpu"))


def compile_kernels_of(module: ModuleOp, options: CompileOptions,
                       device: torch.device = torch.device("cpu")) -> HostProgram:
    """Fuse, lower, compile and load the kernels of a graph-optimized module:
    its host program (on ``device``: a CUDA device runs ptx kernels built for its sm)."""
    host, artifact = build_kernels(module, options)
    return host_program_of(host, load_kernels(artifact, device), options, device)


def build_kernels(module: ModuleOp, options: CompileOptions) -> tuple[ModuleOp, Artifact | None]:
    """The host graph (``kernel`` stage) of a graph-optimized module and the artifact
    of its fused kernels (None where it launches none)."""
    from .build import compile_artifact
    from .stages import fuse_kernels, lower_kernels

    program_ir = lower_kernels(fuse_kernels(module, options), options.target)
    has_kernels = any(True for _ in program_ir.kernels.ops)
    artifact = compile_artifact(program_ir.kernels, options.target, options.features) if has_kernels else None
    return program_ir.host, artifact


def load_kernels(artifact: Artifact | None, device: torch.device) -> Module | None:
    """The fused kernels of ``artifact`` loaded on ``device`` (None: there are none)."""
    from tessera.runtime import Device

    return Device(device).load(artifact) if artifact is not None else None


def host_program_of(host: ModuleOp, kernels: Module | None, options: CompileOptions,
                    device: torch.device) -> HostProgram:
    """The program of a host graph launching ``kernels`` (its fused kernels, loaded on ``device``)."""
    from .host_program import build_host_program

    return build_host_program(host, kernels, device=device, freezing=options.freezing,
                              target=targets.get(options.target))


def compile_graph(gm: torch.fx.GraphModule, options: BackendOptions, kind: str,
                  device: torch.device = torch.device("cpu"), example_inputs: Sequence[Any] = ()) -> Callable:
    """Import and prepare one ATen graph; fall back to ATen (or the reference
    interpreter) if tessera cannot, unless ``options.strict``. The graph's
    :class:`GraphReport` says which (``report.py``). A graph with symbolic sizes
    (``dynamic=True``, ``mark_dynamic``, Dynamo's automatic dynamic shapes) is
    compiled once, its kernels taking their sizes at run time; where some part of
    it cannot be (``report.reason`` of the attempt is logged), it is compiled per
    concrete size class, when first called with it (``size_specialization``)."""
    symbolic = any(is_symbolic(x) for x in example_inputs)
    free = saved_layouts.saved_outputs(gm) if kind == "forward" else frozenset()
    if kind == "backward":  # saved activations as the forward returns them (``saved_layouts``)
        inputs, moved = saved_layouts.backward_inputs(example_inputs) if symbolic else (example_inputs, None)
        saved_layouts.retrace_for_inputs(gm, inputs, moved)
    if symbolic:
        program = _compile_dynamic(gm, options, kind, device, free) if options.dynamic_kernels else None
        if program is None:
            return make_boxed_func(SizeSpecializedGraph(
                gm, lambda g: _compile_program(g, options, kind, device, size_class=True), strict=options.strict))
    else:
        program = _compile_program(gm, options, kind, device, free=free)
    if free and isinstance(program, GraphProgram):
        saved_layouts.report_layouts(gm, program.output_placements, program.output_is_none, free)
    return make_boxed_func(program)


def _compile_program(gm: torch.fx.GraphModule, options: BackendOptions, kind: str, device: torch.device,
                     size_class: bool = False, free: frozenset[int] = frozenset()) -> Callable:
    """The program of a graph (``size_class``: one size class of a graph of symbolic
    sizes; ``free``: the outputs it may return in any layout). It is built outside
    AOTAutograd's fake mode: what tessera builds at compile time (constants, packed
    weights) is made of real tensors."""
    program, report = _build(gm, options, kind, device, free)
    report.size_class = size_class
    publish(report, echo=options.report)
    if not report.compiled and options.strict and options.codegen:
        raise FallbackError.of(report)
    return program


def _compile_dynamic(gm: torch.fx.GraphModule, options: BackendOptions, kind: str,
                     device: torch.device, free: frozenset[int] = frozenset()) -> Callable | None:
    """The program of a graph of symbolic sizes, compiled once with kernels that
    take their sizes at run time (``free``: the outputs it may return in any layout);
    None unless all of it compiles so (the reason is logged)."""
    program, report = _build(gm, options, kind, device, free)
    report.dynamic = True
    if report.status != COMPILED:
        log.info("tessera: %s graph of symbolic sizes compiled per size class: %s", kind, report.reason)
        return None
    publish(report, echo=options.report)
    return program


def compiled_at_sizes(fn: Callable[..., torch.Tensor], *examples: torch.Tensor) -> Callable | None:
    """``fn`` (ATen ops) compiled with the default options for ``examples``' sizes, strides
    and dtypes: what a host function that learns its sizes only when it runs compiles once
    per size (``depthwise_backward`` at symbolic sizes). None unless all of it compiles.

        program = compiled_at_sizes(lambda dy, x: tapwise_weight_grad(dy, x, ...), dy, x)
        (gw,) = program(dy, x)
    """
    from torch.fx.experimental.proxy_tensor import make_fx

    from .decompositions import decomposition_table

    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*examples)
    program, report = _build(gm, BackendOptions(), "forward", examples[0].device)
    return program if report.status == COMPILED else None


def _build(gm: torch.fx.GraphModule, options: BackendOptions, kind: str,
           device: torch.device, free: frozenset[int] = frozenset()) -> tuple[Callable, GraphReport]:
    report = GraphReport(kind)
    if options.target is None:  # the target of the graph's device: CPU, CUDA (ptx), MPS (metal)
        options = dataclasses.replace(options, target=options.target_for(device.type).name)
    with unset_fake_temporarily():
        program = _compile(gm, options, report, device, free)
    return program, report


def _compile(gm: torch.fx.GraphModule, options: BackendOptions, report: GraphReport,
             device: torch.device, free: frozenset[int] = frozenset()) -> Callable:
    compile_options = options.compile_options(device)
    runs = options.codegen and _runs_on(targets.get(compile_options.target), device.type)
    cache = CompileCache.default() if runs and not options.print_ir else None
    key = graph_cache.graph_key(gm, compile_options, free) if cache is not None else None
    if cache is not None and key is not None:
        cached = _cached_program(cache, key, gm, options, compile_options, report, device)
        if cached is not None:
            return cached
    from .context import make_context
    from .fx_import import import_graph
    from .ir_io import print_module, verify_module
    from .pass_pipeline import build_pipeline

    try:
        result = import_graph(gm, free_outputs=free)
        verify_module(result.module)
        build_pipeline(options.pipeline(compile_options.features)).apply(make_context(), result.module)
        verify_module(result.module)
    except Exception as e:  # noqa: BLE001 - any failure here must not reach the user's program
        report.status, report.reason = ATEN, _reason(e)
        return gm.forward
    if options.print_ir:
        print(f"// tessera: {report.kind} graph\n{print_module(result.module)}")
    run = None
    if not options.codegen:
        report.status, report.reason = INTERPRETER, "codegen=False"
    elif not runs:
        report.status, report.reason = INTERPRETER, f"target {compile_options.target} does not run on {device.type} tensors"
    else:
        try:
            host_ir, artifact = build_kernels(result.module, compile_options)
            kernels = load_kernels(artifact, device)
            host = host_program_of(host_ir, kernels, compile_options, device)
        except Exception as e:  # noqa: BLE001 - the interpreter still gives the right answer
            report.status, report.reason = INTERPRETER, _reason(e)
        else:
            run = host
            host.report.kind = report.kind
            vars(report).update(vars(host.report))
            if cache is not None and key is not None:
                graph_cache.store(cache, key, host_ir, artifact, result.output_is_none, host, kernels)
    return GraphProgram(result.module, result.output_is_none, run, _rerun_of(gm), options.strict, report.kind)


def _cached_program(cache: CompileCache, key: str, gm: torch.fx.GraphModule, options: BackendOptions,
                    compile_options: CompileOptions, report: GraphReport, device: torch.device) -> GraphProgram | None:
    """The program of the graph's entry in the graph cache, or None (no entry, or
    one that cannot be loaded: the graph is then compiled)."""
    remote_hits = cache.remote_hits
    entry = graph_cache.lookup(cache, key)
    if entry is None:
        return None
    try:
        host = graph_cache.program_of(entry, load_kernels(entry.artifact, device),
                                      lambda ir, kernels: host_program_of(ir, kernels, compile_options, device))
    except Exception as e:  # noqa: BLE001 - a stale or foreign entry: compile the graph instead
        log.warning("tessera: graph cache entry %s... could not be loaded (%s); compiling the graph",
                    key[:16], _reason(e))
        return None
    host.report.kind = report.kind
    vars(report).update(vars(host.report))
    report.cached = "remote" if cache.remote_hits > remote_hits else "local"
    return GraphProgram(None, list(entry.output_is_none), host, _rerun_of(gm), options.strict, report.kind)


COLLECTIVE_NAMESPACES = ("_c10d_functional", "c10d", "_dtensor")
"""Op namespaces whose ops talk to other processes (all-reduce, all-gather, ...)."""


def _rerun_of(gm: torch.fx.GraphModule) -> Callable | None:
    """The captured graph, to run again as ATen should the compiled program fail
    while running; None for a graph that must not run twice: one that talks to
    other processes (a collective sent twice by one process desynchronizes them
    all) or orders side effects (``with_effects``). Its failure reaches the caller."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and (getattr(n.target, "namespace", None) in COLLECTIVE_NAMESPACES
                                        or n.target is torch.ops.higher_order.with_effects):
            return None
    return gm.forward


def _runs_on(target: targets.Target, device_type: str) -> bool:
    """Whether ``target``'s kernels run on tensors of ``device_type`` in this process."""
    return target.device == device_type and (not isinstance(target, targets.CpuTarget) or target.runs_here())


def _reason(e: Exception) -> str:
    """An exception as one line of a report (its traceback logged at DEBUG)."""
    log.debug("tessera: the exception behind a report's reason", exc_info=e)
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def tessera_backend(gm: torch.fx.GraphModule, example_inputs, options: dict[str, Any] | None = None):
    """The Dynamo backend registered as ``tessera``."""
    opts = BackendOptions.from_dict(options)

    def traced(whole: bool):
        return aot_backend(
            lambda g, ins: compile_graph(g, opts, "forward", graph_device(ins), ins),
            lambda g, ins: compile_graph(g, opts, "backward", graph_device(ins), ins),
            whole=whole,
        )(gm, example_inputs)

    try:
        try:
            return traced(whole=True)
        except (FallbackError, RestartAnalysis):  # RestartAnalysis: Dynamo's signal to trace the frame again
            raise
        except Exception as e:  # noqa: BLE001 - a whole op's ATen meta failed (a symbolic upsample's backward): decomposed
            if not decompositions.raised_by_kept_op(e):
                raise
            return traced(whole=False)
    except (FallbackError, RestartAnalysis):
        raise
    except Exception as e:  # noqa: BLE001 - tracing failed (a decomposition, AOTAutograd): run as captured
        report = GraphReport("dynamo", ATEN, f"AOTAutograd could not trace it: {_reason(e)}")
        publish(report, echo=opts.report)
        if opts.strict:
            raise FallbackError.of(report) from e
        return gm.forward
