# lit configuration of tessera's FileCheck tests (compilerctl, the tsr dialect, passes).
# Run with:  .venv/bin/lit -v test/lit

import os
import shutil
import sys

import lit.formats

config.name = "tessera"
# lit 23 rejects ShTest(True); the internal shell handles `not`, pipes and 2>&1.
config.test_format = lit.formats.ShTest(False)
config.suffixes = [".mlir"]
config.excludes = ["Output"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")  # gitignored

# lit runs under the venv's python: its bin directory holds compilerctl,
# filecheck and torch-mlir-opt. Put it first on PATH.
venv_bin = os.path.dirname(os.path.abspath(sys.executable))
path = os.pathsep.join([venv_bin, os.environ.get("PATH", "")])
config.environment["PATH"] = path
for var in ("HOME", "TMPDIR", "LANG", "LC_ALL"):  # torch wants a writable cache dir
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", sys.executable))


# Optional tools and host features, for `REQUIRES:` lines and `%if` in RUN lines.
def _has_torch_mlir() -> bool:
    try:
        import torch_mlir  # noqa: F401
    except ImportError:
        return False
    return shutil.which("torch-mlir-opt", path=path) is not None


if _has_torch_mlir():
    config.available_features.add("torch-mlir")
if shutil.which("ptxas", path=path):
    config.available_features.add("ptxas")


# Host CPU features as tessera's runtime sees them (LLVM's view, which also knows
# whether the OS enabled AVX-512), for `REQUIRES: avx2` / `REQUIRES: avx512vnni`.
from tessera.runtime.cpu import host_features  # noqa: E402

for feature in ("avx2", "avx512vnni"):
    if feature in host_features():
        config.available_features.add(feature)
