"""What a ``tsr.conv`` does after the convolution, read from the op once: the
library calls and the reference semantics apply it, and a host program keeps
it with no IR (``host_plan.py`` stores it).

    %y = tsr.conv %x, %w, %b, %r {activation = "relu"} : ...
    ConvEpilogue.of(conv)                     # ConvEpilogue(residual=True, activation="relu")
    b, r = epilogue.split((b, r)); epilogue.apply(conv(x, w, b), r)   # relu(conv + r)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F


def _identity(y: torch.Tensor) -> torch.Tensor:
    return y


CONV_ACTIVATION_FNS = {None: _identity, "relu": torch.relu, "relu6": F.relu6, "silu": F.silu}


@dataclass(frozen=True)
class ConvEpilogue:
    residual: bool
    activation: str | None

    @classmethod
    def of(cls, op: Any) -> ConvEpilogue:
        """The epilogue of a ``tsr.conv``."""
        return cls(op.residual is not None, op.activation_name())

    def split(self, operands: Sequence[torch.Tensor]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """``(bias, residual)`` among the tensors given for the operands after the
        weight (as ``tsr.ConvOp``'s ``split_conv_epilogue`` splits its operands)."""
        residual = operands[-1] if self.residual and operands else None
        rest = operands[:-1] if self.residual else operands
        return (rest[0] if rest else None), residual

    def apply(self, y: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """The residual added to the convolution ``y``, then the activation."""
        if residual is not None:
            y = y + residual
        return CONV_ACTIVATION_FNS[self.activation](y)
