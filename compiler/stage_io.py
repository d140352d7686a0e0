"""What flows between the stages of the driver (``stages.py``): options in, outputs out.

    StageOptions(target="x86", features="+avx2,+fma")
    StageOutput(value=module, text=print_module(module), suffix="mlir")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StageOptions:
    """What every stage may look at: the target's name and, for code generation,
    its features (``None``: this host's CPU, or the GPU's default sm)."""

    target: str
    features: str | None = None
    freezing: bool = False
    """As ``torch.compile``'s option: fold what depends on weights alone at compile time."""


@dataclass
class StageOutput:
    """What a stage produced: the object later stages take, its text form, the
    file suffix of a dump, and the bytes of a binary artifact when there is one."""

    value: Any
    text: str
    suffix: str
    data: bytes | None = None
