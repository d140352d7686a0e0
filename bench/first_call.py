"""First-call time of a model in a fresh process: tessera with a cold cache, a
warm local cache and a warm remote cache (a Redis server on 127.0.0.1 and an
empty local directory: a second machine of a fleet), against Inductor with a
cold and a warm FX-graph cache and against the floor Dynamo and AOTAutograd
alone set (``backend="aot_eager"``), in one run.

Each figure is the median over ``--rounds`` fresh processes (rounds
interleaved) of the time from ``torch.compile`` to the first result (imports
of torch and the model excluded; tessera's and Inductor's own imports
included), and each process's whole wall time.

    .venv/bin/python bench/first_call.py [--models video_vae_block resnet50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import torch
torch.set_num_threads(1)
name, backend = sys.argv[1], sys.argv[2]
if name == "resnet50":
    sys.path.insert(0, sys.argv[3] + "/test/py")
    import torchvision_cpu  # noqa: F401 - the CPU torch's torchvision
    import torchvision
    torch.manual_seed(0)
    model, args = torchvision.models.resnet50().eval(), (torch.randn(1, 3, 224, 224),)
else:
    from tessera.compiler.model_loader import load_example
    model, args = load_example(f"{sys.argv[3]}/examples/{name}.py")
ready = time.perf_counter()
reports = []
if backend == "tessera":
    from tessera.compiler.report import collect_reports
    with collect_reports() as reports, torch.no_grad():
        torch.compile(model, backend="tessera")(*args)
else:
    with torch.no_grad():
        torch.compile(model, backend=backend)(*args)
done = time.perf_counter()
print(json.dumps({"first_call": done - ready, "process": done - start,
                  "cached": [r.cached for r in reports], "compiled": all(r.compiled for r in reports)}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen | None, str | None]:
    exe = shutil.which("redis-server")
    if exe is None:
        return None, None
    port = _free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    return None, None


def run_child(model: str, backend: str, env: dict[str, str]) -> dict:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, model, backend, str(ROOT)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(f"{model} {backend} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall"] = time.perf_counter() - start
    return out


def configurations(work: Path, redis_url: str | None, round_: int) -> list[tuple[str, str, dict[str, str]]]:
    """(label, backend, environment) of each measured setting; caches made anew per round."""
    r = work / f"round{round_}"
    configs = [
        ("aot_eager (floor)", "aot_eager", {}),
        ("tessera cold", "tessera", {"TESSERA_CACHE_DIR": str(r / "tsr")}),
        ("tessera warm local", "tessera", {"TESSERA_CACHE_DIR": str(r / "tsr")}),
    ]
    if redis_url:
        configs += [
            ("tessera publish", "tessera", {"TESSERA_CACHE_DIR": str(r / "tsr-a"), "TESSERA_REMOTE_CACHE": redis_url}),
            ("tessera warm remote", "tessera", {"TESSERA_CACHE_DIR": str(r / "tsr-b"), "TESSERA_REMOTE_CACHE": redis_url}),
        ]
    configs += [
        ("inductor cold", "inductor", {"TORCHINDUCTOR_CACHE_DIR": str(r / "ind")}),
        ("inductor warm", "inductor", {"TORCHINDUCTOR_CACHE_DIR": str(r / "ind")}),
    ]
    return configs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["video_vae_block", "resnet50"])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"# {cpu}, {os.cpu_count()} vCPUs; 1 thread; medians of {a.rounds} fresh processes per figure")
    with tempfile.TemporaryDirectory(prefix="tessera-first-call-") as tmp:
        work = Path(tmp)
        server, url = start_redis(work)
        if url is None:
            print("# redis-server not found: no remote-cache figures")
        try:
            for model in a.models:
                times: dict[str, list[tuple[float, float]]] = {}
                for rnd in range(a.rounds):
                    if server is not None:
                        import redis

                        redis.Redis.from_url(url).flushall()
                    for label, backend, env in configurations(work, url, rnd):
                        out = run_child(model, backend, env)
                        want = {"tessera warm local": ["local"], "tessera warm remote": ["remote"]}.get(label)
                        if want is not None and out["cached"] != want * len(out["cached"]):
                            raise RuntimeError(f"{model}: {label} was not served by the cache: {out['cached']}")
                        times.setdefault(label, []).append((out["first_call"], out["process"]))
                floor = statistics.median(t for t, _ in times["aot_eager (floor)"])
                print(f"\n## {model}\n| setting | first call (s) | / floor | process (s) |\n|---|---|---|---|")
                for label, ts in times.items():
                    first = statistics.median(t for t, _ in ts)
                    whole = statistics.median(p for _, p in ts)
                    print(f"| {label} | {first:.2f} | {first / floor:.2f}x | {whole:.2f} |")
        finally:
            if server is not None:
                server.kill()


if __name__ == "__main__":
    main()
