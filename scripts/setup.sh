#!/usr/bin/env bash
# Creates .venv/ in the repository root with the pinned dependencies and
# tessera installed in editable mode. Re-running it is cheap: it reinstalls
# only when requirements.lock or pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.tessera-setup
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.lock
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi

# The AArch64 target's execution test runs its kernels under qemu-aarch64, linked by a cross
# compiler (Debian's packages). Installed where this runs as root with apt; the test skips
# with its reason elsewhere.
if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get install -y -q qemu-user gcc-aarch64-linux-gnu >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q qemu-user gcc-aarch64-linux-gnu >/dev/null 2>&1; }) \
      || echo "setup: qemu-user/gcc-aarch64-linux-gnu not installed: the AArch64 execution test will skip" >&2
  fi
fi
