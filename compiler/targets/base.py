"""A target's description: everything tessera knows about one kind of hardware.

    target = get("x86")
    target.device                 # "cpu": the torch device type its kernels run on
    target.graph_pipeline()       # the passes between the graph and graph-opt stages
    target.fusion_pipeline()      # between graph-opt and fused
    target.stages()               # the stages after `kernel`: {"llvm": ..., "asm": ..., "obj": ...}
    target.codegen("+avx2,+fma")  # the LLVM emitter's knobs (codegen/llvm_target.py)
    target.artifact(kernels, features)  # what the runtime loads (through the compile cache)

:class:`Target` holds what every target shares; :class:`CpuTarget` and
:class:`GpuTarget` what targets of a kind share (the CPU's ``[lo, hi)`` kernels
and ELF objects, the GPU's one-thread-per-point kernels); a target's own folder
(``targets/x86``, ``targets/nvptx``, ...) overrides a few attributes and holds
what is only its own. The registry (``targets/__init__.py``) lists them.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tessera.passes.target_models import TargetModels

from ..stage_io import CompileOptions, StageOutput

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from tessera.runtime.artifact import Artifact

    from ..codegen.llvm_target import LlvmTarget

Stage = Callable[[StageOutput, CompileOptions], StageOutput]
"""One stage: the previous stage's output and the options to this stage's output."""


@dataclass(frozen=True)
class KernelCall:
    """A library op run on one of the target's own kernels: ``kernel`` launched on
    the op's operands, then its result; the operands at the positions of
    ``prepare`` replaced by what the function given there makes of them (a packed
    weight: the host program makes it once per weight version under freezing,
    else on every call).

        KernelCall(conv_kernel, ((1, pack_weight),))   # launch(x, pack_weight(w), b, out)
        KernelCall(SizedConv(spec), ((1, pack_weight),), sized=True)   # launch(x, pack_weight(w), b, out)

    A prepare function with a ``per_call()`` method gives, from it, the variant the
    host program runs where it prepares on every call (no freezing): one writing
    into buffers kept between calls (``targets/x86/conv/kept.py``).

    ``sized``: the op has dynamic sizes; ``kernel`` launches a kernel per concrete
    size, and ``kernel.layout(x)`` gives the output's shape, strides and dtype from
    the first operand (the program's ``SizedAlloc``).
    """

    kernel: Any
    prepare: tuple[tuple[int, Callable[[Any], Any]], ...] = ()
    sized: bool = False


@dataclass(frozen=True)
class TargetStatus:
    """What this host can do with a target (``compilerctl targets``)."""

    target: str
    toolchain: str
    """What builds this target's artifacts here, or why nothing does."""
    can_build: bool
    can_run: bool
    run_note: str


class Target:
    """Base of every target description; subclasses set the attributes and
    override the methods that differ."""

    name: str = ""
    device: str = ""
    """The torch device type whose tensors its kernels run on."""
    half_compute: str = "f32-compute"
    """How bf16/f16 are computed: ``f32-compute`` (as ATen's opmath) or ``native``
    (in the half type); constants (cast-constants) and kernels follow it."""
    transpose_tile: int | None = None
    """Relayout reads through in-register transpose tiles of this width (``lowering.transpose_tiles``)."""
    reduce_lanes: int | None = None
    """Reductions over a kept contiguous dim compute this many neighbours per grid point (``lowering.lower``)."""
    row_lanes: int | None = None
    """Pointwise kernels compute a static innermost loop at least this long as vectors of this many lanes."""
    merge_rows: bool = False
    """Pointwise kernels loop over the innermost dims every tensor stores alike as one row
    (``lowering.row_dims``: ``h * w`` of NCHW), reading their arguments through ``memref.collapse_shape``."""
    thread_per_point: bool = False
    """Kernels run one thread per grid point (``codegen.gpu.thread_per_point``)."""
    cooperative_threads: int = 0
    """Reduction kernels run this many threads (a block) per grid point (``codegen.gpu_reductions``; 0: one)."""
    own_conv_kernel_passes: tuple[str, ...] = ()
    """Fusion passes that shape convs for the target's own conv kernel, by name. All
    run with ``{target=<name> features=...}`` and are left out with ``conv_kernels=False``."""
    default_stage: str = ""
    """What ``compilerctl dump`` prints without ``--stage``: the last text stage."""
    artifact_stage: str = ""
    """The stage whose output the runtime loads (its name is the artifact's kind)."""

    def models(self) -> TargetModels:
        """What the graph passes ask of this target (registered in ``passes.target_models``)."""
        raise NotImplementedError

    # -- pipelines ------------------------------------------------------------------
    def widened_halves(self, features: str | None = None) -> tuple[str, ...]:
        """The half dtypes (``bf16``, ``f16``) whose convs and GEMMs run faster in f32
        on ``features`` (``widen-half``); none unless a target measured it."""
        return ()

    def graph_pipeline(self, freezing: bool = False, features: str | None = None) -> tuple[str, ...]:
        """Typed constants; half-precision convs and GEMMs computed in f32 where the
        target says that is faster (``widened_halves``); conv taps that read only zero padding
        dropped, zero pads folded into the conv (``trim-padded-taps``); per-channel affines (an eval BatchNorm) folded into the conv
        before them: with ``freezing`` every one, without it only where the conv's
        weight is no larger than its output (a folded weight is a new weight, computed
        and packed again on every call: folding every one took 2.4x the time of
        ResNet-18 at 64x64 on 1 thread; unfolded, the BatchNorm is a per-channel scale
        and shift fused into the kernel after the conv); convolutions of upsampled tensors computed before the
        upsample (polyphase) where the target does not compute them faster as they are; each conv's layout from the target's cost model; the
        relayouts that makes hoisted toward producers and inputs (cse merges the
        copies that meet), cancelled in pairs, and fused into the kernels that write
        or read the data; GroupNorm's statistics over channels-last
        tensors taken per channel first (``split-group-stats``); then dead code goes. Hoisting runs twice: a saved activation
        (``free-result-layouts``) returned after the relayout hoisting made of it lets
        that relayout climb further (a training BatchNorm's normalization, to its conv's
        channels-last result)."""
        halves = self.widened_halves(features)
        return (
            f"cast-constants{{policy={self.half_compute}}}",
            *([f'widen-half{{dtypes="{",".join(halves)}"' + ("" if freezing else " gemms=false") + "}"]
              if halves else []),
            "trim-padded-taps",
            "fold-affine-into-conv" if freezing else "fold-affine-into-conv{per_call=true}",
            "fold-upsample-into-conv{" + f"target={self.name}" + (f' features="{features}"' if features else "")
            + (" freezing=true" if freezing else "") + "}",
            f"assign-layouts{{target={self.name}}}",
            "free-result-layouts",
            "hoist-relayouts",
            "cse",
            "cancel-relayouts",
            "free-result-layouts",
            "hoist-relayouts",
            "cse",
            "cancel-relayouts",
            "free-result-layouts",
            "fuse-relayouts",
            "split-group-stats",
            "sink-expands",
            "cse",
            "dce",
        )

    def selects_impl(self) -> bool:
        """Whether the target has kernels of its own for library ops (convs, int8
        GEMMs): ``select-impl`` then records each one's implementation."""
        models = self.models()
        return models.own_conv_kernel is not None or models.own_gemm_kernel is not None

    def fusion_pipeline(self, features: str | None = None, conv_kernels: bool = True,
                        freezing: bool = False) -> tuple[str, ...]:
        """Convs shaped for the target's own kernel; library ops take the epilogues
        they compute themselves; each conv's and int8 GEMM's implementation recorded;
        then the remaining pointwise/reduction groups become kernels. ``features``: the CPU
        to build for (``None``: this host's); ``conv_kernels=False``: every conv on the library;
        ``freezing``: weights packed once, not on every call."""
        options = (f"target={self.name}" + (f' features="{features}"' if features else "")
                   + (" freezing=true" if freezing else ""))
        shape = [f"{p}{{{options}}}" for p in self.own_conv_kernel_passes] if conv_kernels else []
        select = ([f"select-impl{{{options}" + ("" if conv_kernels else " convs=false") + "}"]
                  if self.selects_impl() else [])
        return (*shape, "fuse-conv-epilogues", "fuse-int-mm-epilogues", "dce", *select, "fuse-kernels")

    def host_call(self, op: Any, freezing: bool = False) -> Any:
        """How the host program runs library op ``op`` here: a callable on its tensor
        operands (a library call), a :class:`KernelCall` (one of the target's own
        kernels), or None: its reference semantics through ATen. ``freezing``: as
        the backend's option (weights packed once per version)."""
        return None

    # -- code generation ------------------------------------------------------------
    def stages(self) -> dict[str, Stage]:
        """The stages after ``kernel``, in order."""
        raise NotImplementedError

    def codegen(self, features: str | None = None, cpu: str | None = None) -> LlvmTarget:
        """The LLVM emitter's knobs for these features (``None``: the host's / default)."""
        raise NotImplementedError(f"target {self.name} has no LLVM code generator")

    def device_features(self, device: Any) -> str | None:
        """The features to build for when tensors are on the torch ``device`` and none
        were asked for (``None``: the target's default, the host's for a CPU)."""
        return None

    def cache_key(self, features: str | None = None) -> str:
        """What this target's code for ``features`` requires of the machine (name,
        triple, CPU, features): the target's part of every compile-cache key."""
        return self.codegen(features).cache_key()

    def artifact(self, kernels: ModuleOp, features: str | None = None) -> tuple[str, Callable[[], Artifact]]:
        """The cache key part of this target and features, and a builder of the
        artifact the runtime loads for ``kernels``: the driver's stages from
        ``kernel`` to :attr:`artifact_stage`, the same ones ``compilerctl dump`` runs."""
        from tessera.runtime.artifact import Artifact

        from ..codegen.kernel_form import kernel_signatures
        from ..stages import run_stages
        from .llvm_stages import kernels_only

        key = self.cache_key(features)

        def build() -> Artifact:
            stage = self.artifact_stage
            out = run_stages(kernels_only(kernels), CompileOptions(self.name, features), upto=stage,
                             start_at="kernel")[stage]
            data = out.data if out.data is not None else out.text.encode()
            return Artifact(self.name, stage, data, tuple(kernel_signatures(kernels)), key)

        return key, build

    def emits(self) -> tuple[str, ...]:
        """What ``compilerctl translate --emit`` can produce from a kernels module."""
        return tuple(self.stages())

    def library_kernel_modules(self, host: Any, codegen: LlvmTarget) -> list:
        """LLVM modules of kernels tessera generates for library ops of ``host`` (none by default)."""
        return []

    def status(self) -> TargetStatus:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<target {self.name} ({self.device})>"


class CpuTarget(Target):
    """A CPU: kernels walk ``[lo, hi)`` slices of their grid on the runtime's
    threads (``codegen/cpu.py``); artifacts are ELF objects."""

    device = "cpu"
    default_stage = "asm"
    artifact_stage = "obj"
    machines: tuple[str, ...] = ()
    """``platform.machine()`` values of hosts that run this target's objects."""
    llvm_name: str = ""
    """The LLVM backend's name (``llvm.Target.from_triple(...).name``)."""

    def stages(self) -> dict[str, Stage]:
        from .llvm_stages import assembly_stage, llvm_stage, object_stage

        return {"llvm": llvm_stage, "asm": assembly_stage("s"), "obj": object_stage}

    def runs_here(self) -> bool:
        return platform.machine().lower() in self.machines

    def host_call(self, op: Any, freezing: bool = False) -> Any:
        """oneDNN for convs, MKL's packed GEMM for linear layers (``library_calls``)."""
        from ..library_calls import cpu_library_call

        return cpu_library_call(op, freezing)

    def status(self) -> TargetStatus:
        from .llvm_stages import llvm_has

        has = llvm_has(self.codegen_triple())
        here = self.runs_here()
        return TargetStatus(self.name, f"llvmlite (LLVM {self.llvm_name})" if has else f"llvmlite without {self.llvm_name}",
                            has, here, self.host_note() if here else f"host is {platform.machine()}")

    def codegen_triple(self) -> str:
        raise NotImplementedError

    def host_note(self) -> str:
        return "host CPU"


class GpuTarget(Target):
    """A GPU: one thread per grid point; pointwise kernels walk their contiguous
    dim across threads (coalesced)."""

    thread_per_point = True

    def host_call(self, op: Any, freezing: bool = False) -> Any:
        """ATen's convolution (cuDNN on CUDA) in the layout the passes chose."""
        from ..library_calls import gpu_library_call

        return gpu_library_call(op)
