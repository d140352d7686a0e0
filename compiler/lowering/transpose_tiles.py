"""Tiled transposes for pointwise kernels that read an input across its
contiguous dim (a relayout fused into its consumer, x86 only).

The loop order (``lower._transpose_aware``) walks the output along its
contiguous dim ``a`` and puts the input's contiguous dim ``b`` second
innermost. A strided read along ``a`` still costs a gather per vector. With
tiles, each ``V x V`` block of such an input is read as ``V`` vectors along
``b``, transposed in registers (``log2 V`` rounds of interleaving shuffles) and
stored to a scratch tile; the kernel's own loops then read the scratch along
``a`` like any contiguous input:

    scf.parallel (%h, %tb, %ta) ... {              // %b0 = %tb * 8, %a0 = %ta * 8
      %r0 = vector.transfer_read %in0[%c0, %b0, %h, %a0], %pad
              {permutation_map = affine_map<(d0, d1, d2, d3) -> (d1)>, in_bounds = [true]}
              : memref<1x64x56x56xf32, strided<[200704, 1, 3584, 64]>>, vector<8xf32>
      ...                                          // %r1 ... %r7 at %a0 + 1 ... %a0 + 7
      %s0 = vector.shuffle %r0, %r4 [0, 8, 1, 9, 2, 10, 3, 11] : vector<8xf32>, vector<8xf32>
      ...                                          // 3 rounds of 8 shuffles
      vector.store %t0, %tile[%c0, %c0] : memref<8x8xf32>, vector<8xf32>
      ...
      scf.for %bi = %c0 to %c8 step %c1 {
        scf.for %ai = %c0 to %c8 step %c1 {
          %x = memref.load %tile[%bi, %ai] : memref<8x8xf32>   // was %in0[%c0, %b0 + %bi, %h, %a0 + %ai]
          ...
```

A tile at the edge of a dim that ``V`` does not divide (an ``scf.if`` on the
tile's start) loops over the ``min(V, n - start)`` indices inside the tensor,
reading the input strided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    MemRefType,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, BlockArgument, SSAValue

from tessera.dialects import tsr
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.shapes import shape_of

from .kernel_builder import KernelBuilder

INDEX_PRESERVING = (*ELEMENTWISE_OPS, tsr.ConvertOp, tsr.RelayoutOp)
"""Ops whose result at an index reads their tensor operands at the same index
(when the operand has the result's shape)."""


def read_at_output_index(arg: BlockArgument, shape: Sequence[int]) -> bool:
    """Whether every read of the fused body's argument ``arg`` happens at the
    index of the output element being written: the paths from it to the yield
    go only through same-shaped elementwise ops, converts and relayouts."""
    stack: list[SSAValue] = [arg]
    while stack:
        v = stack.pop()
        for use in v.uses:
            op = use.operation
            if isinstance(op, tsr.YieldOp):
                continue
            if not isinstance(op, INDEX_PRESERVING) or any(shape_of(r.type) != tuple(shape) for r in op.results):
                return False
            stack.extend(op.results)
    return True


def interleave_masks(width: int) -> tuple[list[int], list[int]]:
    """The shuffle masks of one transpose round: the low and the high halves
    of two vectors interleaved (``[0, V, 1, V+1, ...]``, ``[V/2, 3V/2, ...]``)."""
    half = width // 2
    lo = [x for k in range(half) for x in (k, width + k)]
    hi = [x for k in range(half, width) for x in (k, width + k)]
    return lo, hi


class TransposeTiles:
    """Scratch tiles of the inputs a tiled pointwise kernel reads across their
    contiguous dim ``b`` (the output's is ``a``)."""

    def __init__(self, kb: KernelBuilder, width: int, rank: int, b: int, a: int):
        if width < 2 or width & (width - 1):
            raise ValueError(f"transpose tiles need a power-of-two width, not {width}")
        self.kb, self.width, self.rank, self.b, self.a = kb, width, rank, b, a

    def fill(self, ref: SSAValue, at: dict[int, SSAValue], b0: SSAValue, a0: SSAValue) -> SSAValue:
        """A ``V x V`` scratch memref with ``tile[i, j] = ref[..., b0 + i, ..., a0 + j]``."""
        kb, width = self.kb, self.width
        t = ref.type
        assert isinstance(t, MemRefType)
        elem = t.get_element_type()
        vec = VectorType(elem, [width])
        rows = [self._read_along_b(ref, vec, {**at, self.b: b0, self.a: kb.add(a0, k)}) for k in range(width)]
        lo, hi = interleave_masks(width)
        for _ in range(int(math.log2(width))):
            nxt: list[SSAValue] = []
            for j in range(width // 2):
                x, y = rows[j], rows[j + width // 2]
                nxt += [self._shuffle(x, y, lo, vec), self._shuffle(x, y, hi, vec)]
            rows = nxt
        tile = kb.scratch(MemRefType(elem, [width, width]))
        for i, row in enumerate(rows):
            kb.emit(vector.StoreOp(row, tile, [kb.index(i), kb.index(0)]))
        return tile

    def _read_along_b(self, ref: SSAValue, vec: VectorType, at: dict[int, SSAValue]) -> SSAValue:
        kb = self.kb
        return kb.read_along(ref, [at.get(d, kb.index(0)) for d in range(self.rank)], self.b, vec)

    def _shuffle(self, x: SSAValue, y: SSAValue, mask: list[int], vec: VectorType) -> SSAValue:
        return self.kb.value(vector.ShuffleOp(x, y, DenseArrayBase.from_list(i64, mask), result_type=vec))


def tileable_element(elem: Attribute) -> bool:
    """Element types the tiles move as vectors (``i1`` is stored as bytes: not tiled)."""
    return elem != i1
