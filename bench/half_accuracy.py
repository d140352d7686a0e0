"""How far bf16 results are from float64's, eager's and tessera's, over zoo models.

    .venv/bin/python bench/half_accuracy.py --models resnet50,mobilenet_v2 [--size 224]

Each model (``test/py/zoo_models.py``, BatchNorm calibrated) is cast to bf16 and
run by eager and by tessera with freezing; the same bf16 weights and input run
in float64 give the reference. Printed per model: the largest absolute
difference over the reference's largest magnitude, for eager, for tessera, and
between the two. Where ``widen-half`` computes the network in f32, tessera's
distance is the input's and output's rounding, and its distance from eager is
eager's own error.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "py"))
sys.path.insert(0, os.path.dirname(__file__))

import zoo  # noqa: E402


def distances(name: str) -> tuple[float, float, float]:
    model, inputs = zoo.build(name)
    wide = copy.deepcopy(model).double()
    torch._dynamo.reset()
    with torch.no_grad():
        ref = wide(*[x.double() if x.is_floating_point() else x for x in inputs])
        eager = model(*inputs)
        got = torch.compile(model, backend="tessera", options={"freezing": True})(*inputs)
    scale = ref.abs().max().item()

    def dist(a: torch.Tensor, b: torch.Tensor) -> float:
        return (a.double() - b.double()).abs().max().item() / scale

    return dist(eager, ref), dist(got, ref), dist(got, eager)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet50,mobilenet_v2")
    ap.add_argument("--size", type=int, default=224)
    a = ap.parse_args()
    zoo.SIZE, zoo.DTYPE = a.size, torch.bfloat16
    import tessera  # noqa: F401 - registers the backend

    print("| model | eager bf16 vs float64 | tessera vs float64 | tessera vs eager |")
    print("| --- | --- | --- | --- |")
    for name in a.models.split(","):
        e, t, d = distances(name)
        print(f"| {name} | {e:.1e} | {t:.1e} | {d:.1e} |", flush=True)


if __name__ == "__main__":
    main()
