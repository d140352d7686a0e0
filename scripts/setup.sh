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

# Debian's packages some tests need, installed where this runs as root with apt; each test
# skips with its reason elsewhere:
# - qemu-user, gcc-aarch64-linux-gnu: the AArch64 target's execution test runs its kernels
#   under qemu-aarch64, linked by a cross compiler;
# - redis-server: the compile cache's remote tier is tested against a real server on 127.0.0.1;
# - libcap2-bin (capsh): the read-only-cache test drops root's permission override.
need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
command -v redis-server >/dev/null || need+=(redis-server)
command -v capsh >/dev/null || need+=(libcap2-bin)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get install -y -q "${need[@]}" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need[@]}" >/dev/null 2>&1; }) \
      || echo "setup: ${need[*]} not installed: the tests that need them will skip" >&2
  fi
fi
