"""``compilerctl translate``: a kernels module (IR text) to a target's code, like ``mlir-translate``.

    compilerctl dump model.py --target ptx --stage kernel > k.mlir
    compilerctl translate k.mlir --target ptx --emit ptx      # PTX text
    compilerctl translate k.mlir --target x86 --emit asm      # x86 assembly

The input is a ``builtin.module`` of ``tsr.kernel`` functions (docs/kernel-ir.md),
or a whole ``kernel``-stage dump (``// ----- host`` ... ``// ----- kernels``),
of which the kernels part is read. What can be emitted is the table
:data:`EMITTERS`, keyed by ``(target, emit)``; a new target adds rows:

    EMITTERS[("metal", "msl")] = lambda kernels, features: ...
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from .codegen.errors import CodegenError
from .errors import Location, TesseraError
from .ir_io import op_location, parse_module, verify_module

Emitter = Callable[[ModuleOp, "str | None"], "str | bytes"]
"""``emitter(kernels, features) -> text or bytes``."""

KERNELS_MARKER = "// ----- kernels"


class TranslateError(TesseraError):
    """A ``(target, emit)`` pair that no emitter provides."""


def _llvm(target: str) -> Emitter:
    def emit(kernels: ModuleOp, features: str | None) -> str:
        from .codegen import get_target, optimized_llvm_ir

        return optimized_llvm_ir(kernels, get_target(target, features=features))

    return emit


def _assembly(target: str) -> Emitter:
    def emit(kernels: ModuleOp, features: str | None) -> str:
        from .codegen import assembly, get_target

        return assembly(kernels, get_target(target, features=features))

    return emit


def _artifact(target: str) -> Emitter:
    def emit(kernels: ModuleOp, features: str | None) -> bytes:
        from .codegen import build_artifact, get_target

        return build_artifact(kernels, get_target(target, features=features)).data

    return emit


def _cubin(kernels: ModuleOp, features: str | None) -> bytes:
    from .codegen import assembly, get_target
    from .codegen.ptxas import assemble

    target = get_target("ptx", features=features)
    return assemble(assembly(kernels, target), target.cpu)


def _msl(kernels: ModuleOp) -> str:
    from .codegen.msl import msl_source

    return msl_source(kernels)


def _metallib(kernels: ModuleOp) -> bytes:
    from .codegen.msl.metallib import metallib_artifact

    return metallib_artifact(kernels).data


EMITTERS: dict[tuple[str, str], Emitter] = {
    ("x86", "llvm"): _llvm("x86"),
    ("x86", "asm"): _assembly("x86"),
    ("x86", "obj"): _artifact("x86"),
    ("ptx", "llvm"): _llvm("ptx"),
    ("ptx", "ptx"): _assembly("ptx"),
    ("ptx", "cubin"): _cubin,
    ("metal", "msl"): lambda kernels, features: _msl(kernels),
    ("metal", "metallib"): lambda kernels, features: _metallib(kernels),
}


def emit_kinds() -> list[str]:
    return sorted({emit for _, emit in EMITTERS})


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
    """``text`` (a kernels module) as ``emit`` for ``target``."""
    emitter = EMITTERS.get((target, emit))
    if emitter is None:
        known = ", ".join(e for t, e in EMITTERS if t == target) or "nothing"
        raise TranslateError(f"target {target} cannot emit '{emit}'; it emits: {known}")
    try:
        return emitter(read_kernels(text, filename), features)
    except TesseraError as e:
        if e.location is None:
            e.location = Location(filename)
        raise
