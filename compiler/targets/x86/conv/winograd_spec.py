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
tessera's conv kernel (group ``p``: point ``p``'s matrices).

A 3-D conv of ``kt x 3 x 3`` taps, stride 1 (a video model's, a causal video VAE's)
is Winograd over each frame's plane, its time taps the GEMM's: the transforms
run on the ``N*D`` frames as a batch of planes (NDHWC memory is ``N*D`` NHWC
planes), and the GEMM is a grouped ``kt x 1`` conv over ``[N, P*C, D, T]``,
its time padding the conv's::

    ws = WinogradSpec(ConvSpec(1, 64, 64, (8, 56, 56), (3, 3, 3), padding=1), m=4)
    ws.input_planes.conv         # ConvSpec(8, 64, 64, (56, 56), (3, 3), padding=1): the frames as planes
    ws.gemm                      # ConvSpec(1, 36*64, 36*64, (8, 196), (3, 1), padding=(1, 0), groups=36)
    M[n, d, t, p, co] = sum_k sum_ci V[n, d + k - 1, t, p, ci] U_k[p, co, ci]

Per output pixel F(4,3) multiplies 36/16 = 2.25 times per input channel and output channel where
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
    """A conv the Winograd kernels compute: 2-D 3x3, or 3-D ``kt x 3 x 3`` (its weight
    not flipped), stride 1, dilation 1, one group, channels-last in and out, an
    epilogue of vector ops (bias, residual, ReLU/ReLU6/SiLU: ``epilogue.activate``)."""
    n = spec.spatial_dims
    return (spec.kernel[-2:] == (3, 3) and (n == 2 or (n == 3 and not spec.flipped_weight))
            and spec.dims("stride") == (1,) * n and spec.dims("dilation") == (1,) * n and spec.groups == 1
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
                                  "(2-D 3x3 or 3-D kt x 3 x 3, stride 1, dilation 1, one group, channels-last, "
                                  "bias/residual/ReLU/SiLU)")

    @property
    def a(self) -> int:
        """Side of an input patch (and of the transformed tile): ``m + 2``."""
        return self.m + 2

    @property
    def points(self) -> int:
        return self.a * self.a

    @property
    def frames(self) -> tuple[int, int]:
        """Frames in and out (a 2-D conv: one plane each)."""
        c = self.conv
        return (c.input_size[0], c.output_size[0]) if c.spatial_dims == 3 else (1, 1)

    @property
    def input_planes(self) -> WinogradSpec:
        """The input transform's view: a 2-D conv over the ``N * D`` frames (a 2-D conv: itself)."""
        return self if self.conv.spatial_dims == 2 else self._planes(self.frames[0])

    @property
    def output_planes(self) -> WinogradSpec:
        """The output transform's view, over the ``N * D_out`` output frames."""
        return self if self.conv.spatial_dims == 2 else self._planes(self.frames[1])

    def _planes(self, frames: int) -> WinogradSpec:
        c = self.conv
        plane = ConvSpec(c.batch * frames, c.in_channels, c.out_channels, c.input_size[1:], (3, 3),
                         padding=c.dims("padding")[1:], bias=c.bias, residual=c.residual,
                         activation=c.activation, isa=c.isa)
        return WinogradSpec(plane, self.m)

    @property
    def tiles_hw(self) -> tuple[int, int]:
        oh, ow = self.conv.output_size[-2:]
        return -(-oh // self.m), -(-ow // self.m)

    @property
    def tiles(self) -> int:
        th, tw = self.tiles_hw
        return th * tw

    @property
    def gemm(self) -> ConvSpec:
        """The batched GEMM as a grouped conv over the tiles (one group per point): 1x1,
        or ``kt x 1`` over ``(frames, tiles)`` with the conv's time padding."""
        c = self.conv
        p = self.points
        kt, pt = (c.kernel[0], c.dims("padding")[0]) if c.spatial_dims == 3 else (1, 0)
        return ConvSpec(c.batch, p * c.in_channels, p * c.out_channels, (self.frames[0], self.tiles), (kt, 1),
                        padding=(pt, 0), groups=p, isa=c.isa)

    def transformed_shape(self, channels: int, frames: int = 1) -> tuple[int, ...]:
        """``V`` (input channels and frames) or ``M`` (output ones): ``[N, P*C, D, T]``."""
        return (self.conv.batch, self.points * channels, frames, self.tiles)

    def transformed_strides(self, channels: int, frames: int = 1) -> tuple[int, ...]:
        pc = self.points * channels
        return (frames * self.tiles * pc, 1, self.tiles * pc, pc)

    @property
    def isa(self) -> str:
        return self.conv.isa

    @property
    def name(self) -> str:
        return f"winograd{self.m}_{self.conv.kernel_name}"
