"""B packed for the microkernels: VNNI K-groups of 4 bytes x panels of ``nr`` columns.

    packed = pack_b(w, "avx512vnni")        # w: [K, N] int8 -> PackedB, data [NP, KG, nr, 4]
    packed.data[p, g, c, j] == w[4*g + j, p*nr + c]       (0 past K or N)

``NP = ceil(N / nr)`` panels, ``KG = ceil(K / 4)`` K-groups. One K-group of a
panel is ``nr * 4`` contiguous bytes: exactly the B operands of one
multiply-add step of the register tile, streamed in order by the K loop.
For s8 A on the VNNI paths the bytes are ``b + 128`` as u8 (``b ^ 0x80``; the
padding stays 0), see ``isa``. ``pack_b`` is pure torch (frozen weights, at
compile time); ``pack_kernel`` builds the same packing as a kernel (B known
only at run time).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tessera.compiler.targets.x86.int8_gemm.errors import OperandMismatch
from tessera.compiler.targets.x86.int8_gemm.isa import get_isa


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class PackLayout:
    """Shape of packed B for (K, N) on an isa, and whether it holds ``b + 128``."""

    K: int
    N: int
    nr: int
    flipped: bool

    @property
    def panels(self) -> int:
        return cdiv(self.N, self.nr)

    @property
    def groups(self) -> int:
        return cdiv(self.K, 4)

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (self.panels, self.groups, self.nr, 4)

    @property
    def strides(self) -> tuple[int, int, int, int]:
        return (self.groups * self.nr * 4, self.nr * 4, 4, 1)

    @property
    def panel_bytes(self) -> int:
        return self.groups * self.nr * 4


def pack_layout(K: int, N: int, isa: str, a_signed: bool) -> PackLayout:
    path = get_isa(isa)
    return PackLayout(K, N, path.nr, path.flips_b(a_signed))


@dataclass(frozen=True, eq=False)
class PackedB:
    """A packed int8 B ([K, N] logically) for one isa and one signedness of A."""

    data: torch.Tensor
    K: int
    N: int
    isa: str
    a_signed: bool

    @property
    def layout(self) -> PackLayout:
        return pack_layout(self.K, self.N, self.isa, self.a_signed)

    def check(self, K: int, N: int, isa: str, a_signed: bool) -> None:
        """Raises :class:`OperandMismatch` unless this packing serves that GEMM."""
        want = (K, N, isa, a_signed)
        have = (self.K, self.N, self.isa, self.a_signed)
        if want != have:
            raise OperandMismatch(f"B was packed for (K, N, isa, a_signed) = {have}, the GEMM needs {want}")


def check_b(b: torch.Tensor) -> None:
    if not isinstance(b, torch.Tensor) or b.dtype != torch.int8 or b.dim() != 2:
        what = f"{b.dtype} tensor of rank {b.dim()}" if isinstance(b, torch.Tensor) else type(b).__name__
        raise OperandMismatch(f"B must be a 2-D int8 tensor [K, N], got a {what}")
    if b.device.type != "cpu":
        raise OperandMismatch(f"B must be on the cpu, not {b.device}")


def pack_b(b: torch.Tensor, isa: str, a_signed: bool = False) -> PackedB:
    """Packs ``b`` ([K, N] int8) with torch ops (for weights frozen at compile time).

        pack_b(torch.randint(-128, 128, (37, 61), dtype=torch.int8), "avx2").data.shape
        # torch.Size([8, 10, 8, 4])
    """
    check_b(b)
    K, N = b.shape
    lay = pack_layout(K, N, isa, a_signed)
    src = b.view(torch.uint8) ^ 0x80 if lay.flipped else b.view(torch.uint8)
    padded = torch.zeros(lay.groups * 4, lay.panels * lay.nr, dtype=torch.uint8)
    padded[:K, :N] = src
    data = padded.view(lay.groups, 4, lay.panels, lay.nr).permute(2, 0, 3, 1).contiguous().view(torch.int8)
    return PackedB(data, K, N, isa, a_signed)
