"""``import torchvision`` beside the CPU build of torch.

The torchvision wheel served for torch 2.13 is a CUDA build: its ``_C.so``
does not load beside the CPU torch, so no ``torchvision::`` op is registered,
and the import dies registering fake kernels for ``nms`` and ``qnms``. Those
two schemas are defined here first (the models of the zoo use neither op),
then torchvision imports with its models whole.

    from torchvision_cpu import torchvision
"""

from __future__ import annotations

import torch

_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


def _define_missing_schemas() -> None:
    if all(hasattr(torch.ops.torchvision, name) for name in _SCHEMAS):
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
