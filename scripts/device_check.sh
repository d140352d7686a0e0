#!/usr/bin/env bash
# tessera's CUDA checks on a machine with an NVIDIA GPU and its own CUDA build of torch, offline.
#
#   scripts/device_check.sh [STEP...]     (steps: ptx zoo bench profile, default all; logs under $OUT,
#                                          or /tmp/device-check; ZOO_SECONDS, ZOO_TESTS narrow the zoo)
#
# The machine's python3 must hold a CUDA torch, cuda-bindings, pytest and numpy. What it may lack
# comes in .whl/ (ignored by git; carried by the device tool): site.tar.xz, the unpacked wheels
# of xdsl 0.74.0, llvmlite 0.50.0 (for its Python), immutabledict and ordered-set packed with xz
# (44 MB: the zip wheels would not fit the 64 MiB that travels), and any plain wheel (diffusers
# for the zoo's VAEs), each fetched here with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 -d .whl NAME==VER
# tessera itself goes on the path as a package of links (the layout `pip install -e .` maps),
# with its Dynamo backend's entry point, so `torch.compile(..., backend="tessera")` finds it as a
# user's would.
# Runs, in this order, each with a time limit so one stuck step cannot take the rest:
#   1. the GPU tests of test_ptx.py (kernels and torch.compile on CUDA against eager and float64);
#   2. the zoo's inference on CUDA (test_zoo.py -k cuda);
#   3. bench/models.py --device cuda (eager, Inductor, tessera, in full float32);
#   4. bench/gpu_profile.py (wall and GPU time per call, kernels by GPU time).
set -u
OUT=${OUT:-/tmp/device-check}
ZOO_SECONDS=${ZOO_SECONDS:-180}
ZOO_TESTS=${ZOO_TESTS:-cuda}
STEPS=${*:-ptx zoo bench profile}
mkdir -p "$OUT"
REPO=$PWD
SITE=/tmp/tessera-site
PKG=/tmp/tessera-pkg

mkdir -p "$SITE" "$PKG/tessera" "$PKG/tessera-0.1.0.dist-info"
[ -f .whl/site.tar.xz ] && tar xJf .whl/site.tar.xz -C "$SITE"
for w in .whl/*.whl; do [ -f "$w" ] && python3 -m zipfile -e "$w" "$SITE"; done
for d in compiler dialects passes runtime; do ln -sfn "$REPO/$d" "$PKG/tessera/$d"; done
printf 'Metadata-Version: 2.1\nName: tessera\nVersion: 0.1.0\n' >"$PKG/tessera-0.1.0.dist-info/METADATA"
printf '[torch_dynamo_backends]\ntessera = tessera.compiler.backend:tessera_backend\n' \
    >"$PKG/tessera-0.1.0.dist-info/entry_points.txt"
export PYTHONPATH="$PKG:$SITE" PYTHONUNBUFFERED=1 TESSERA_CACHE_DIR=/tmp/tessera-cache

nvidia-smi -L
python3 - <<'EOF' || exit 1
import torch, llvmlite, xdsl, cuda.bindings
import tessera.compiler.backend as b
from importlib.metadata import entry_points
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(),
      "llvmlite", llvmlite.__version__, "xdsl", xdsl.__version__, "cuda-bindings", cuda.bindings.__version__)
print("tessera from", b.__file__, [e.value for e in entry_points(group="torch_dynamo_backends")])
EOF

run() {  # run NAME SECONDS CMD...: CMD's output to $OUT/NAME.log and here, if STEPS names it
    local name=$1 seconds=$2; shift 2
    [[ " $STEPS " == *" $name "* ]] || return 0
    echo "== $name (limit ${seconds}s)"
    timeout "$seconds" "$@" >"$OUT/$name.log" 2>&1
    echo "== $name: exit $?"
    tail -n 25 "$OUT/$name.log"
}
PYTEST=(python3 -m pytest -q -p no:cacheprovider -rfE --timeout 150 --durations 15)
run ptx 90 "${PYTEST[@]}" -o log_cli=true --log-cli-level=INFO test/py/test_ptx.py -k gpu
run zoo "$ZOO_SECONDS" "${PYTEST[@]}" test/py/test_zoo.py -m "slow or not slow" -k "$ZOO_TESTS"
run bench 100 python3 bench/models.py --device cuda --models video_vae_block,resnet_block,mlp --modes Inductor,tessera --reps 20
run profile 80 python3 bench/gpu_profile.py --models video_vae_block,vae2d_block,mlp
