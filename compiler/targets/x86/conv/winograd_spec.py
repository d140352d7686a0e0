"""Winograd F(m x m, 3 x 3) for a stride-1 3x3 conv: the transform matrices and
the shapes of the three steps (input transform, batched GEMM, output transform).

    ws = WinogradSpec(ConvSpec(1, 64, 64, (56, 56), (3, 3), padding=1), m=4)
    ws.points, ws.tiles          # 36 transform points, 14 x 14 = 196 output tiles of 4 x 4
    ws.gemm                      # ConvSpec(1, 36*64, 36*64, (1, 196), (1, 1), groups=36): one GEMM per point
    V[n, t, p, ci]  = (B^T d_t B)[p]              # d_t: tile t's 6 x 6 input patch (zeros past the edges)
    M[n, t, p, co]  = sum_ci V[n, t, p, ci] U[p, co, ci]      # U = G g G^T, once per weight
    y[tile t]       = A^T M[n, t, :, co] A        # 4 x 4 outputs, then bias, residual, activation

``V`` and ``M`` are the GEMM's channels-last input and output (``[N, P*C, 1, T]``:
pixel ``t``, channel ``p*C + c``), so the batched GEMM is a grouped 1x1 conv on
tessera's conv kernel (group ``p``: point ``p``'s matrices). Per output pixel
F(4,3) multiplies 36/16 = 2.25 times per input channel and output channel where
the direct conv multiplies 9 times (4x fewer FLOPs); F(2,3), 16/4 = 4 (2.25x
fewer). The matrices are Lavin & Gray's (interpolation points 0, +-1, +-2, inf).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as Fr

from tessera.compiler.targets.x86.conv.errors import InvalidConvSpec
from tessera.compiler.targets.x86.conv.spec import ConvSpec

Matrix = tuple[tuple[Fr, ...], ...]


def _m(rows) -> Matrix:
    return tuple(tuple(Fr(x) for x in row) for row in rows)


# F(2, 3)
_BT2 = _m([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]])
_G2 = _m([[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]])
_AT2 = _m([[1, 1, 1, 0], [0, 1, -1, -1]])
# F(4, 3)
_BT4 = _m([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
           [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]])
_G4 = _m([[Fr(1, 4), 0, 0], [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
          [Fr(1, 24), Fr(1, 12), Fr(1, 6)], [Fr(1, 24), Fr(-1, 12), Fr(1, 6)], [0, 0, 1]])
_AT4 = _m([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]])

TRANSFORMS: dict[int, tuple[Matrix, Matrix, Matrix]] = {2: (_BT2, _G2, _AT2), 4: (_BT4, _G4, _AT4)}
"""``m`` -> ``(B^T, G, A^T)`` of F(m x m, 3 x 3)."""


def winograd_fits(spec: ConvSpec) -> bool:
    """A conv the Winograd kernels compute: 2-D, 3x3, stride 1, dilation 1, one
    group, channels-last in and out, an epilogue of vector ops (bias, residual,
    ReLU/ReLU6/SiLU: ``epilogue.activate``)."""
    return (spec.spatial_dims == 2 and spec.kernel == (3, 3) and spec.dims("stride") == (1, 1)
            and spec.dims("dilation") == (1, 1) and spec.groups == 1
            and spec.input_layout == spec.output_layout == "channels_last"
            and spec.activation in ("none", "relu", "relu6", "silu"))


@dataclass(frozen=True)
class WinogradSpec:
    conv: ConvSpec
    m: int = 4

    def __post_init__(self) -> None:
        if self.m not in TRANSFORMS:
            raise InvalidConvSpec(f"Winograd F({self.m}, 3) is not one of F(2, 3), F(4, 3)")
        if not winograd_fits(self.conv):
            raise InvalidConvSpec(f"{self.conv.kernel_name}: not a conv the Winograd kernels compute "
                                  "(2-D 3x3, stride 1, dilation 1, one group, channels-last, bias/residual/ReLU/SiLU)")

    @property
    def a(self) -> int:
        """Side of an input patch (and of the transformed tile): ``m + 2``."""
        return self.m + 2

    @property
    def points(self) -> int:
        return self.a * self.a

    @property
    def tiles_hw(self) -> tuple[int, int]:
        oh, ow = self.conv.output_size
        return -(-oh // self.m), -(-ow // self.m)

    @property
    def tiles(self) -> int:
        th, tw = self.tiles_hw
        return th * tw

    @property
    def gemm(self) -> ConvSpec:
        """The batched GEMM as a grouped 1x1 conv over the tiles (one group per point)."""
        c = self.conv
        p = self.points
        return ConvSpec(c.batch, p * c.in_channels, p * c.out_channels, (1, self.tiles), (1, 1), groups=p, isa=c.isa)

    def transformed_shape(self, channels: int) -> tuple[int, ...]:
        """``V`` (input channels) or ``M`` (output channels): ``[N, P*C, 1, T]``."""
        return (self.conv.batch, self.points * channels, 1, self.tiles)

    def transformed_strides(self, channels: int) -> tuple[int, ...]:
        pc = self.points * channels
        return (self.tiles * pc, 1, self.tiles * pc, pc)

    @property
    def isa(self) -> str:
        return self.conv.isa

    @property
    def name(self) -> str:
        return f"winograd{self.m}_{self.conv.kernel_name}"
