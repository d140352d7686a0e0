"""``tsr.int_mm``/``tsr.scaled_int_mm`` on tessera's exact int8 GEMM, on the path
``select-impl`` recorded (the x86 model: ``gemm_choice.py``).

    %y = tsr.scaled_int_mm %x, %w, %xs, %ws, %b {tsr.impl = "avx512vnni"} : (...) -> tensor<32x16xf32>
    // the host program's step (host_program.py)
    Call(Int8Gemm(op, "avx512vnni"), (x, w, xs, ws, b), (y,))

B is packed once per weight version under ``freezing``, else per call
(:class:`PackedWeight`); for ``scaled_int_mm`` the scale/bias epilogue is in
the GEMM's stores. Where the path cannot run (features given for another
CPU) or the tensors are not on the CPU, the reference semantics (ATen) compute it.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from tessera.compiler.host_steps import scaled_int_mm
from tessera.compiler.weight_cache import PackedWeight

from .api import int8_mm, pack_b_kernel
from .isa import can_run


class Int8Gemm:
    """One int8 GEMM op's call on the path ``isa``."""

    def __init__(self, op: Any, isa: str, freezing: bool = False):
        from xdsl.dialects.builtin import i8

        from tessera.dialects.tsr.shapes import elem_of

        self.isa = isa if can_run(isa) else None
        a_signed = elem_of(op.lhs.type) == i8
        self.weight = PackedWeight(functools.partial(_pack_b, isa=isa, a_signed=a_signed), freezing)
        self.__name__ = "tessera_int8_gemm"

    def __call__(self, a: torch.Tensor, b: torch.Tensor, *epilogue: torch.Tensor) -> torch.Tensor:
        if self.isa is None or a.device.type != "cpu":  # the reference semantics, through ATen
            return scaled_int_mm(a, b, *epilogue) if epilogue else torch._int_mm(a, b)
        return int8_mm(a.contiguous(), self.weight(b), *epilogue, isa=self.isa)


def _pack_b(b: torch.Tensor, isa: str, a_signed: bool):
    return pack_b_kernel(b.contiguous(), isa, a_signed)
