"""Index maps of the data-movement ops: where, in an operand, the element at a
logical index of the result comes from. Indices are ``index`` SSA values;
every function takes the result index and returns the operand index.

    broadcast [4,1] -> [2,4,8]:  (i, j, k) -> (j, 0)
    permute dims=[1,0]:          (i, j)    -> (j, i)
    reshape [2,12] -> [2,3,4]:   (i, j, k) -> (i, j*4 + k)
    slice dim=1 start=1 step=2:  (i, j)    -> (i, 1 + 2*j)
    pad low=[2] high=[0]:        (i)       -> (clamp(i - 2)), in bounds iff i - 2 >= 0
    upsample nearest 16 -> 32:   (..., h)  -> (..., h / 2)
    polyphase interleave 2x:     (n, c, y) -> (n, (y % 2)*C + c, y / 2 + y % 2)

``tsr.relayout`` and ``tsr.convert`` are the identity map: a relayout changes
only the strides the loads and stores use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, f32, i64
from xdsl.ir import SSAValue

from tessera.dialects.tsr.ops_nn import MAX_DYNAMIC_REPEAT, aten_nearest_step, nearest_repeat, nearest_sources
from tessera.dialects.tsr.shapes import DYNAMIC

from .kernel_builder import KernelBuilder, LoweringError

Index = tuple[SSAValue, ...]


def broadcast(kb: KernelBuilder, idx: Index, src: Sequence[int], dst: Sequence[int]) -> Index:
    """Numpy broadcasting (and ``tsr.expand``): ``src`` right-aligned to ``dst``."""
    lead = len(dst) - len(src)
    return tuple(kb.index(0) if s == 1 and dst[lead + d] != 1 else idx[lead + d] for d, s in enumerate(src))


def permute(idx: Index, dims: Sequence[int]) -> Index:
    out: list[SSAValue | None] = [None] * len(dims)
    for i, d in enumerate(dims):
        out[d] = idx[i]
    return tuple(out)  # type: ignore[arg-type]


def slice_(kb: KernelBuilder, idx: Index, dim: int, start: int | SSAValue, step: int) -> Index:
    """``tsr.slice``: ``i`` along ``dim`` reads ``start + i * step`` (a start from the end: a run-time value)."""
    out = list(idx)
    out[dim] = kb.add(kb.mul(idx[dim], step), start)
    return tuple(out)


def reshape(kb: KernelBuilder, idx: Index, src: Sequence[int], dst: Sequence[int]) -> Index:
    """Row-major reshape. Dims of size 1 are skipped and the others matched in
    groups of equal size products, so an unsqueeze costs nothing and a merge
    or split costs one linearization per group. An empty tensor has no
    element to read (its kernel's grid is empty): index 0."""
    out = [kb.index(0)] * len(src)
    if 0 in src or 0 in dst:
        return tuple(out)
    s_dims = [d for d, n in enumerate(src) if n != 1]
    t_dims = [d for d, n in enumerate(dst) if n != 1]
    i = j = 0
    while i < len(s_dims) and j < len(t_dims):
        gs, gt = [s_dims[i]], [t_dims[j]]
        ps, pt = src[s_dims[i]], dst[t_dims[j]]
        i, j = i + 1, j + 1
        while ps != pt:
            if ps < pt:
                gs.append(s_dims[i])
                ps *= src[s_dims[i]]
                i += 1
            else:
                gt.append(t_dims[j])
                pt *= dst[t_dims[j]]
                j += 1
        lin = kb.index(0)
        for d in gt:
            lin = kb.add(kb.mul(lin, dst[d]), idx[d])
        inner = ps
        for k, d in enumerate(gs):
            inner //= src[d]
            q = kb.div(lin, inner)
            out[d] = q if k == 0 else kb.rem(q, src[d])
    return tuple(out)


def anchored_reshape(kb: KernelBuilder, idx: Index, src: Sequence[int], dst: Sequence[int],
                     anchors: Sequence[tuple[int, int]]) -> Index:
    """A reshape whose dynamic dims are one input dim each (``anchors``: ``(input
    dim, result dim)``, ``dim_sources.reshape_anchors``): an anchor's index passes
    through, the static runs between anchors reshape as :func:`reshape` does.

        (1, 1, 32, ?, ?) -> (1, 32, ?, ?), anchors ((3, 2), (4, 3)):  (n, c, y, x) -> (0, 0, c, y, x)
    """
    out: list[SSAValue] = [kb.index(0)] * len(src)
    bounds = [(-1, -1), *anchors, (len(src), len(dst))]
    for (a, c), (b, e) in zip(bounds, bounds[1:]):
        out[a + 1:b] = reshape(kb, idx[c + 1:e], src[a + 1:b], dst[c + 1:e])
        if b < len(src):
            out[b] = idx[e]
    return tuple(out)


def pad(kb: KernelBuilder, idx: Index, low: Sequence[int], high: Sequence[int],
        src: Sequence[int | SSAValue]) -> tuple[Index, SSAValue | None]:
    """The clamped source index and the in-bounds condition (None: always in
    bounds). The clamped index is always readable, so the producer can be
    computed unconditionally and the pad value selected where out of bounds.
    ``src``: the input's sizes (index values where dynamic)."""
    cond: SSAValue | None = None
    out = []
    for i, lo, hi, n in zip(idx, low, high, src):
        j = kb.sub(i, lo)
        if lo > 0:
            below = kb.cmp("slt", j, 0)
            cond = kb.both(cond, kb.cmp("sge", j, 0))
            j = kb.select(below, kb.index(0), j)
        if hi > 0:
            last = kb.sub(kb.size(n), 1)
            above = kb.cmp("sgt", j, last)
            cond = kb.both(cond, kb.cmp("sle", kb.sub(i, lo), last))
            j = kb.select(above, last, j)
        out.append(j)
    return tuple(out), cond


def nearest_source(kb: KernelBuilder, i: SSAValue, n_in: int, n_out: int, scale: float | None) -> SSAValue:
    """ATen's ``nearest_idx``: ``min(floor(i * step), n_in - 1)`` with ``step``
    an f32, as integer division where that is exactly the same for every ``i``."""
    if n_in == n_out:
        return i
    repeat = nearest_repeat(n_in, n_out, scale)
    if repeat is not None:
        return kb.div(i, repeat)
    step = aten_nearest_step(n_in, n_out, scale)
    exact = nearest_sources(n_in, n_out, scale)
    if n_in % n_out == 0 and np.array_equal(exact, np.arange(n_out) * (n_in // n_out)):
        return kb.mul(i, n_in // n_out)
    as_int = kb.value(arith.IndexCastOp(i, i64))
    prod = kb.value(arith.MulfOp(kb.value(arith.SIToFPOp(as_int, f32)), kb.const(float(step), f32)))
    src = kb.value(arith.IndexCastOp(kb.value(arith.FPToSIOp(prod, i64)), IndexType()))
    top = kb.index(n_in - 1)
    return kb.select(kb.cmp("sgt", src, top), top, src)


def upsample_nearest(kb: KernelBuilder, idx: Index, src: Sequence[int], dst: Sequence[int],
                     scales: Sequence[float] | None) -> Index:
    """``tsr.upsample`` (nearest): batch and channels map to themselves. A
    dynamic spatial dim needs a whole scale ``s`` (ATen then reads ``i / s``: ``nearest_repeat``)."""
    out = list(idx[:2])
    for k, d in enumerate(range(2, len(src))):
        scale = scales[k] if scales else None
        if DYNAMIC in (src[d], dst[d]):
            repeat = nearest_repeat(src[d], dst[d], scale)
            if repeat is None:
                raise LoweringError(f"a nearest upsample of a dynamic dim needs a whole scale up to "
                                    f"{MAX_DYNAMIC_REPEAT}, got {scale}")
            out.append(kb.div(idx[d], repeat))
            continue
        out.append(nearest_source(kb, idx[d], src[d], dst[d], scale))
    return tuple(out)


def polyphase_interleave(kb: KernelBuilder, idx: Index, scales: Sequence[int], shifts: Sequence[Sequence[int]],
                         channels: int) -> Index:
    """``tsr.polyphase_interleave``: output ``(n, c, s*i + a, ...)`` reads
    ``(n, phase(a...)*channels + c, i + shift(a), ...)``."""
    phase, out = kb.index(0), []
    for y, s, sh in zip(idx[2:], scales, shifts):
        a, i = (kb.rem(y, s), kb.div(y, s)) if s > 1 else (kb.index(0), y)
        phase = kb.add(kb.mul(phase, s), a) if s > 1 else phase
        shift = kb.index(sh[-1])
        for k in range(s - 2, -1, -1):  # shift(a) as a chain of selects (s is small)
            if sh[k] != sh[-1]:
                shift = kb.select(kb.cmp("eq", a, k), kb.index(sh[k]), shift)
        out.append(kb.add(i, shift) if any(sh) else i)
    return (idx[0], kb.add(kb.mul(phase, channels), idx[1]), *out)


def concat_offsets(sizes: Sequence[int]) -> list[int]:
    """Where each operand of a concat starts along its dim."""
    offs, at = [], 0
    for n in sizes:
        offs.append(at)
        at += n
    return offs
