"""The AArch64 target executed: kernels built by the registry's aarch64 target,
linked by a cross compiler into a static program and run under ``qemu-aarch64``
(Debian's ``qemu-user`` and ``gcc-aarch64-linux-gnu``, which ``make setup``
installs where it can), against the same eager reference as x86."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from kernel_testing import kernel, memref, parse_kernels  # noqa: E402

from tessera.compiler.build import compile_artifact  # noqa: E402

CC, QEMU = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
needs_qemu = pytest.mark.skipif(CC is None or QEMU is None,
                                reason="needs qemu-user and gcc-aarch64-linux-gnu (apt-get install qemu-user gcc-aarch64-linux-gnu)")
ROWS, COLS = 16, 64


def _silu_gelu_kernels() -> str:
    t = memref([ROWS, COLS], "f32")
    body = f"""
    %c64 = arith.constant {COLS} : index
    %one = arith.constant 1.0 : f32
    %half = arith.constant 0.5 : f32
    %rsqrt2 = arith.constant 0.70710678 : f32
    scf.for %j = %c0 to %c64 step %c1 {{
      %v = memref.load %x[%i0, %j] : {t}
      %n = arith.negf %v : f32
      %e = math.exp %n : f32
      %d = arith.addf %e, %one : f32
      %s = arith.divf %v, %d : f32
      memref.store %s, %y[%i0, %j] : {t}
      %u = arith.mulf %v, %rsqrt2 : f32
      %erf = math.erf %u : f32
      %p = arith.addf %erf, %one : f32
      %h = arith.mulf %v, %half : f32
      %g = arith.mulf %h, %p : f32
      memref.store %g, %z[%i0, %j] : {t}
    }}"""
    return kernel("act", [("x", t), ("y", t), ("z", t)], [1, 2], [ROWS], body)


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
void act(float *x, float *y, float *z, long lo, long hi);
int main(void) {
  static float x[%(n)d], y[%(n)d], z[%(n)d];
  for (int i = 0; i < %(n)d; i++) if (scanf("%%a", &x[i]) != 1) return 2;
  act(x, y, z, 0, %(rows)d / 2);           /* two slices of the grid, as two threads would */
  act(x, y, z, %(rows)d / 2, %(rows)d);
  for (int i = 0; i < %(n)d; i++) printf("%%a %%a\n", y[i], z[i]);
  return 0;
}
"""


@needs_qemu
def test_aarch64_kernels_run_under_qemu_and_match_eager(tmp_path):
    art = compile_artifact(parse_kernels(_silu_gelu_kernels()), "aarch64", "+neon", cache=None)
    assert art.kind == "obj" and art.triple.startswith("aarch64")
    (tmp_path / "act.o").write_bytes(art.data)
    (tmp_path / "main.c").write_text(DRIVER % {"n": ROWS * COLS, "rows": ROWS})
    exe = tmp_path / "act"
    subprocess.run([CC, "-O1", "-static", "-o", str(exe), str(tmp_path / "main.c"), str(tmp_path / "act.o"), "-lm"],
                   check=True, capture_output=True, text=True, timeout=120)
    x = torch.randn(ROWS, COLS, generator=torch.Generator().manual_seed(0)) * 4
    x[0, :4] = torch.tensor([0.0, -0.0, 30.0, -30.0])
    stdin = "\n".join(v.hex() for v in x.flatten().tolist())
    proc = subprocess.run([QEMU, str(exe)], input=stdin, capture_output=True, text=True, timeout=120, check=True)
    got = torch.tensor([[float.fromhex(v) for v in line.split()] for line in proc.stdout.splitlines()])
    y, z = got[:, 0].reshape(ROWS, COLS), got[:, 1].reshape(ROWS, COLS)
    torch.testing.assert_close(y, torch.nn.functional.silu(x), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(z, torch.nn.functional.gelu(x), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not platform.machine().lower().startswith(("x86", "amd64")), reason="checks the refusal on an x86 host")
def test_aarch64_object_is_refused_by_an_x86_process():
    from tessera.runtime import Device
    from tessera.runtime.errors import LoadError

    art = compile_artifact(parse_kernels(_silu_gelu_kernels()), "aarch64", "+neon", cache=None)
    with pytest.raises(LoadError, match="built for aarch64"):
        Device("cpu").load(art)
