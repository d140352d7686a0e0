"""``import torchvision`` beside the CPU build of torch.

The torchvision wheel served for torch 2.13 is a CUDA build: its ``_C.so``
does not load beside the CPU torch, so no ``torchvision::`` op is registered,
and the import dies registering fake kernels for ``nms`` and ``qnms``. Those
two schemas are defined here first (the models of the zoo use neither op),
then torchvision imports with its models whole. Where the extension loads (a
matching build, on a CUDA machine), nothing is defined.

    from torchvision_cpu import torchvision
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


def _extension_loads() -> bool:
    """Whether torchvision's own ``_C`` extension loads beside this torch (a matching
    build, as on a CUDA machine): it then registers the schemas itself, and defining
    them here first would abort the process when it does."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    for folder in spec.submodule_search_locations:
        for lib in Path(folder).glob("_C*.so"):
            try:
                torch.ops.load_library(str(lib))
            except OSError:
                return False
            return True
    return False


def _define_missing_schemas() -> None:
    if all(hasattr(torch.ops.torchvision, name) for name in _SCHEMAS) or _extension_loads():
        return
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for name, schema in _SCHEMAS.items():
        try:
            getattr(torch.ops.torchvision, name)
        except (AttributeError, RuntimeError):
            lib.define(schema)
    _keep.append(lib)


_keep: list = []
_define_missing_schemas()

import torchvision  # noqa: E402

__all__ = ["torchvision"]
