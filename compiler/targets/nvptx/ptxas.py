"""PTX to cubin with NVIDIA's ``ptxas`` (found like ``compilerctl targets`` finds it).

    cubin = assemble(ptx_text, "sm_90")          # ELF bytes for that GPU
    assemble(bad_ptx, "sm_90")                   # PtxasError: ptxas's own message
    assemble(ptx_text, "sm_90")                  # ToolNotFound when no ptxas is installed
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.errors import TesseraError

TIMEOUT_S = 120


class ToolNotFound(TesseraError):
    """An external tool a stage needs (``ptxas``) is not installed on this host."""

    toolchain_missing = True


class PtxasError(CodegenError):
    """``ptxas`` rejected the PTX; the message is ptxas's."""


def ptxas_path() -> str | None:
    """``ptxas`` on the PATH or in the CUDA toolkit's usual place, or None."""
    found = shutil.which("ptxas")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/ptxas",):
        if shutil.which(candidate):
            return candidate
    return None


def find_ptxas() -> str:
    path = ptxas_path()
    if path is None:
        raise ToolNotFound("the cubin stage needs 'ptxas' (CUDA toolkit, or the one in the triton wheel) on PATH; "
                           "none was found (the ptx stage works without it)")
    return path


def assemble(ptx: str | bytes, sm: str, opt_level: int = 3) -> bytes:
    """The cubin ``ptxas -arch=<sm>`` makes of ``ptx``."""
    exe = find_ptxas()
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    with tempfile.TemporaryDirectory(prefix="tessera-ptxas-") as tmp:
        src, out = Path(tmp) / "kernels.ptx", Path(tmp) / "kernels.cubin"
        src.write_text(text)
        try:
            proc = subprocess.run([exe, f"-arch={sm}", f"-O{opt_level}", str(src), "-o", str(out)],
                                  capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise PtxasError(f"running {exe} failed: {err}") from None
        if proc.returncode != 0:
            msg = (proc.stderr or proc.stdout).strip().replace(str(src), "<ptx>")
            raise PtxasError(f"ptxas -arch={sm} rejected the PTX:\n{msg}")
        return out.read_bytes()


def ptxas_version() -> str | None:
    """``"13.0"`` (the CUDA release line of ``ptxas --version``), or None without ptxas."""
    try:
        exe = find_ptxas()
        text = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False,
                              env={**os.environ, "LC_ALL": "C"}).stdout
    except (ToolNotFound, OSError, subprocess.TimeoutExpired):
        return None
    for line in text.splitlines():
        if "release" in line:
            return line.split("release", 1)[1].split(",")[0].strip()
    return None
