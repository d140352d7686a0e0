"""``compilerctl translate``: a kernels module (IR text) to a target's code, like ``mlir-translate``.

    compilerctl dump model.py --target ptx --stage kernel > k.mlir
    compilerctl translate k.mlir --target ptx --emit ptx      # PTX text
    compilerctl translate k.mlir --target x86 --emit asm      # x86 assembly

The input is a ``builtin.module`` of ``tsr.kernel`` functions (docs/kernel-ir.md),
or a whole ``kernel``-stage dump (``// ----- host`` ... ``// ----- kernels``),
of which the kernels part is read. It runs the driver's stages
(``stages.py``) from ``kernel`` on: ``--emit`` names one of the target's
stages after ``kernel`` (``llvm``, ``asm``, ``obj``, ``ptx``, ``cubin``, ``msl``, ...),
so a new target's stages are emittable without a line here.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from . import targets
from .codegen.errors import CodegenError
from .errors import Location, TesseraError
from .ir_io import op_location, parse_module, verify_module
from .stage_io import CompileOptions
from .stages import run_stages
from .targets.llvm_stages import kernels_only

KERNELS_MARKER = "// ----- kernels"


class TranslateError(TesseraError):
    """A ``(target, emit)`` pair that the target does not provide."""


def emits(target: str) -> tuple[str, ...]:
    """What ``target`` can emit from a kernels module: its stages after ``kernel``."""
    return targets.get(target).emits()


def emit_kinds() -> list[str]:
    return sorted({e for t in targets.names() for e in emits(t)})


def read_kernels(text: str, filename: str) -> ModuleOp:
    """The kernels module of ``text``: a whole file, or what follows the
    ``// ----- kernels`` line of a ``kernel``-stage dump (line numbers kept)."""
    first_line = 1
    at = text.find(KERNELS_MARKER)
    if at >= 0:
        first_line = text.count("\n", 0, at) + 2
        text = text[text.index("\n", at) + 1:] if "\n" in text[at:] else ""
    module = parse_module(text, filename, first_line)
    verify_module(module)
    _check_kernels(module)
    return module


def _check_kernels(module: ModuleOp) -> None:
    """Each kernel against the contract, its errors located at the kernel's ``func.func``."""
    from .codegen.kernel_form import analyze_kernel, kernel_functions

    functions = kernel_functions(module)
    if not functions:
        raise CodegenError("the input holds no func.func with the 'tsr.kernel' attribute", op_location(module))
    for fn in functions:
        try:
            analyze_kernel(fn)
        except CodegenError as e:
            raise CodegenError(e.message, e.location or op_location(fn)) from None


def translate(text: str, filename: str, target: str, emit: str, features: str | None = None) -> str | bytes:
    """``text`` (a kernels module) as ``emit`` for ``target``: the driver's stages
    from ``kernel`` on, up to ``emit``."""
    if emit not in emits(target):
        raise TranslateError(f"target {target} cannot emit '{emit}'; it emits: {', '.join(emits(target))}")
    try:
        kernels = read_kernels(text, filename)
        out = run_stages(kernels_only(kernels), CompileOptions(target, features), upto=emit, start_at="kernel")[emit]
        return out.data if out.data is not None else out.text
    except TesseraError as e:
        if e.location is None:
            e.location = Location(filename)
        raise
