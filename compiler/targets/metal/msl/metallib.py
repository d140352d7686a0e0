"""MSL source to a ``.metallib`` with Apple's toolchain, through the compile cache.

    data = compile_metallib(source)        # bytes of a .metallib; MetalToolchainMissing without xcrun
    artifact = metallib_artifact(kernels)  # Artifact(target="metal", kind="metallib", ...)

runs (macOS, Xcode or the Command Line Tools with the Metal toolchain)

    xcrun -sdk macosx metal -std=metal3.1 -fno-fast-math -c kernels.metal -o kernels.air
    xcrun -sdk macosx metallib kernels.air -o kernels.metallib

``-fno-fast-math``: the kernels rely on IEEE NaN and signed-zero behaviour
(``arith.maximumf``, unordered compares), which fast math may fold away; torch's
own ``compile_shader`` also builds with fast math off. Results are cached by a
hash of the source, the flags, the tessera version and the code generator's
sources, so a model compiles its metallib once per machine.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from tessera.compiler.codegen.errors import CodegenError
from tessera.runtime.artifact import Artifact
from tessera.runtime.cache import CompileCache, cache_key
from tessera.runtime.signature import KernelSignature

METAL_FLAGS = ("-std=metal3.1", "-fno-fast-math")
TIMEOUT_S = 300


class ToolchainMissing(CodegenError):
    """This host lacks a tool a stage needs (here: Apple's ``xcrun metal``);
    ``compilerctl dump --all-stages`` skips such a stage with a note."""

    toolchain_missing = True


class MetalCompileError(CodegenError):
    """``xcrun metal`` or ``xcrun metallib`` rejected the printed source."""


def xcrun_path() -> str | None:
    return shutil.which("xcrun")


def _run(cmd: list[str], what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise MetalCompileError(f"{what} could not run: {err}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise MetalCompileError(f"{what} failed (exit {proc.returncode}):\n{detail}")


def build_metallib(source: str) -> bytes:
    """Compiles ``source`` with ``xcrun metal`` and links it with ``xcrun metallib``."""
    xcrun = xcrun_path()
    if xcrun is None:
        raise ToolchainMissing(
            "building a .metallib needs Apple's Metal toolchain (xcrun metal / xcrun metallib, from Xcode on "
            "macOS), which this host lacks; the 'msl' stage's source can instead be compiled at run time by "
            "torch.mps.compile_shader"
        )
    with tempfile.TemporaryDirectory(prefix="tessera-metal-") as tmp:
        src, air, lib = (Path(tmp) / f"kernels.{ext}" for ext in ("metal", "air", "metallib"))
        src.write_text(source)
        _run([xcrun, "-sdk", "macosx", "metal", *METAL_FLAGS, "-c", str(src), "-o", str(air)], "xcrun metal")
        _run([xcrun, "-sdk", "macosx", "metallib", str(air), "-o", str(lib)], "xcrun metallib")
        return lib.read_bytes()


def compile_metallib(source: str, signatures: Sequence[KernelSignature] = (),
                     cache: CompileCache | None = None) -> Artifact:
    """A ``metallib`` artifact of ``source`` (with the kernels' ``signatures``),
    from ``cache`` when it holds one for this source and toolchain setting."""
    from tessera.compiler.codegen.fingerprint import codegen_fingerprint, tessera_version
    from tessera.compiler.targets.metal.msl import MSL_VERSION

    target_key = f"metal|{MSL_VERSION}|{' '.join(METAL_FLAGS)}"

    def build() -> Artifact:
        return Artifact("metal", "metallib", build_metallib(source), tuple(signatures), target_key)

    if cache is None:
        return build()
    key = cache_key(source, target_key, "metallib", tessera_version(), codegen_fingerprint())
    return cache.get_or_build(key, build)


def metallib_artifact(kernels: ModuleOp, cache: CompileCache | None = None) -> Artifact:
    """Every kernel of ``kernels`` printed as MSL and packaged as a metallib."""
    from tessera.compiler.targets.metal.msl import print_msl

    module = print_msl(kernels)
    return compile_metallib(module.source, module.signatures, cache)
