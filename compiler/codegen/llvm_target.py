"""What differs between targets, as small overridable knobs.

The emitter (``llvm_emitter``) writes one kernel body for every target; a
target says how a kernel is entered and how the grid is walked (x86: a
``[lo, hi)`` range loop; NVPTX: one grid point per thread), which address
space buffers live in, the triple/data layout/CPU/features of its
``TargetMachine``, vector width preference, and which f16/bf16 conversions
its hardware does natively. A new target is a subclass of tens of lines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.types import I64, PTR

if TYPE_CHECKING:
    from tessera.compiler.codegen.llvm_emitter import KernelEmitter

BodyEmitter = Callable[[ir.IRBuilder, Sequence[ir.Value]], None]
"""Emits one grid point's body at the builder's position, given the parallel indices (i64)."""


LLVM_OPTIONS = ("-enable-mem-access-versioning=0",)
"""LLVM's command-line options for every kernel (process-wide, set once).

Loop versioning on symbolic strides is off: a kernel with dynamic sizes reads
its strides at run time, and LLVM would otherwise vectorize a loop only for
the case ``stride == 1`` and run every other stride (a channels-last read of
an NCHW input, whose channel stride is ``H * W``) through a scalar copy of the
loop; without it the loop is vectorized with gathers, as for a static stride
(the video-VAE block's GroupNorm-SiLU-pad kernel: 2.95 ms -> 0.5 ms). A
stride the layout makes 1 is static in the kernel's memref type, so the
contiguous case keeps its plain vector loads."""


@functools.cache
def init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    for option in LLVM_OPTIONS:
        llvm.set_option("tessera", option)


class LlvmTarget:
    """Base of every target. Subclasses set the class attributes and override
    :meth:`declare_kernel` / :meth:`emit_grid`."""

    name: str = "abstract"
    artifact_kind: str = "obj"
    """What :meth:`emit_artifact` returns: ``obj``, ``ptx``, ..."""
    triple: str = ""
    cpu: str = ""
    features: str = ""
    reloc: str = "default"
    codemodel: str = "default"
    prefer_vector_width: int | None = None
    """``prefer-vector-width`` function attribute in bits (None: the CPU's tuning)."""
    native_f16_convert: bool = True
    """Whether f32<->f16 conversions lower to instructions (else the emitter expands them)."""
    native_bf16_convert: bool = True

    # -- identity ---------------------------------------------------------------------
    def cache_key(self) -> str:
        """Everything about the target that changes the machine code."""
        return f"{self.name}|{self.triple}|{self.cpu}|{self.features}|{self.prefer_vector_width}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cpu={self.cpu!r}, features={self.features!r})"

    # -- LLVM objects -----------------------------------------------------------------
    @functools.cached_property
    def target_machine(self) -> llvm.TargetMachine:
        init_llvm()
        return llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, reloc=self.reloc, codemodel=self.codemodel
        )

    @property
    def data_layout(self) -> str:
        return str(self.target_machine.target_data)

    # -- ABI knobs --------------------------------------------------------------------
    def buffer_pointer_type(self) -> ir.PointerType:
        return PTR

    def function_attributes(self) -> tuple[str, ...]:
        return ("nounwind",)

    def string_function_attributes(self) -> dict[str, str]:
        """Key/value attributes such as ``"prefer-vector-width"="512"``."""
        out = {}
        if self.prefer_vector_width:
            out["prefer-vector-width"] = str(self.prefer_vector_width)
        return out

    def declare_kernel(self, module: ir.Module, name: str, num_buffers: int,
                       num_dims: int = 0) -> tuple[ir.Function, list[ir.Value]]:
        """The kernel's LLVM function and its buffer pointer arguments; a kernel
        with ``num_dims`` dynamic sizes and strides takes them too (:meth:`read_dims`)."""
        raise NotImplementedError

    def read_dims(self, builder: ir.IRBuilder, fn: ir.Function, num_buffers: int, num_dims: int) -> list[ir.Value]:
        """The dynamic sizes and strides of a kernel declared with ``num_dims``, as
        ``i64`` values at the builder's position (the function's entry)."""
        raise NotImplementedError

    def emit_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value],
                  body: BodyEmitter, vectorize: bool = True) -> None:
        """Walk this call's share of ``grid`` (extents: numbers, or ``i64`` values
        of a dynamic kernel), calling ``body`` once per point; ends with the function's ``ret``.
        ``vectorize=False``: the body has loops of its own, which are where vectors
        belong; a loop over grid points stays scalar (where the target has one)."""
        raise NotImplementedError

    def emit_block_grid(self, builder: ir.IRBuilder, fn: ir.Function, grid: Sequence[int | ir.Value],
                        body: BodyEmitter, threads: int) -> None:
        """As :meth:`emit_grid`, with ``threads`` threads (a GPU block) per grid point, every one
        running ``body`` (a cooperative kernel, ``codegen/gpu_reductions.py``)."""
        raise CodegenError(f"the {self.name} target runs one thread per grid point, not {threads}")

    def lane_index(self, builder: ir.IRBuilder) -> ir.Value:
        """``gpu.thread_id x`` of a cooperative kernel: the thread's lane in its grid point (``i64``)."""
        raise CodegenError(f"the {self.name} target has no lanes (gpu.thread_id)")

    def block_reduce(self, em: KernelEmitter, value: ir.Value, combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
        """``gpu.all_reduce``: ``value`` of every lane of the point folded with ``combine``, in every lane."""
        raise CodegenError(f"the {self.name} target has no lanes (gpu.all_reduce)")

    # -- artifacts --------------------------------------------------------------------
    def emit_artifact(self, module: llvm.ModuleRef) -> bytes:
        raise NotImplementedError

    def emit_assembly(self, module: llvm.ModuleRef) -> str:
        return self.target_machine.emit_assembly(module)


def extent(g: int | ir.Value, ty: ir.IntType = I64) -> ir.Value:
    """A grid extent as an LLVM value of ``ty``."""
    return ir.Constant(ty, g) if isinstance(g, int) else g
