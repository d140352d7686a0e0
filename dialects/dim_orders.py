"""Dim orders, the arithmetic of ``#tsr.layout`` with no IR (``tsr/layout.py``
re-exports it): what the runtime-side code (kernel specs, host programs loaded
from the graph cache) needs of layouts without loading the dialect.

    channels_last(4)                               # (0, 2, 3, 1): nhwc
    strides_for((1, 8, 4, 4), (0, 2, 3, 1))        # (128, 1, 32, 8)
    perm_from_strides((1, 8, 4, 4), (128, 1, 32, 8))   # (0, 2, 3, 1)
"""

from __future__ import annotations

from collections.abc import Sequence

NAMED_LAYOUTS: dict[str, tuple[int, ...]] = {
    "ncl": (0, 1, 2),
    "nlc": (0, 2, 1),
    "nchw": (0, 1, 2, 3),
    "nhwc": (0, 2, 3, 1),
    "ncdhw": (0, 1, 2, 3, 4),
    "ndhwc": (0, 2, 3, 4, 1),
}
_NAME_OF = {perm: name for name, perm in NAMED_LAYOUTS.items()}


def identity(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def channels_last(rank: int) -> tuple[int, ...]:
    """The channels-last order of a rank-``rank`` N,C,spatial... tensor."""
    return (0, *range(2, rank), 1) if rank >= 3 else identity(rank)


def outputs_last(rank: int) -> tuple[int, ...]:
    """The dim order of a conv weight ``[C_out, C_in/groups, (kd,) kh, kw]`` stored ``[(kd,) kh,
    kw, C_in/groups, C_out]`` (``DHWIO``): output channels innermost, as a linear's ``[K, N]``."""
    return (*range(2, rank), 1, 0)


def strides_for(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a dense tensor of logical ``shape`` stored in ``perm`` order."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(perm):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def perm_from_strides(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """The dim order a dense strided tensor is stored in.

    Size-1 dims carry no information, nor do broadcast dims (stride 0, an
    ``expand``): they are placed where the contiguous order would put them
    relative to the others, so a contiguous tensor always maps to the identity,
    a channels-last one to ``nhwc``/``ndhwc``, and an expanded one keeps its
    innermost dim innermost (an ATen op given the tensor back, such as CUDA's
    attention with a bias, may need its last dim contiguous)::

        perm_from_strides((2, 3, 8, 8), (8, 0, 0, 1)) == (0, 1, 2, 3)
    """
    rank = len(shape)
    big = [d for d in range(rank) if shape[d] != 1 and strides[d] != 0]
    ordered = sorted(big, key=lambda d: (-strides[d], d))
    # Prefer the well-known orders when they explain the strides equally well.
    for cand in (identity(rank), channels_last(rank)):
        if [d for d in cand if d in big] == ordered:
            return cand
    result: list[int] = []
    it = iter(ordered)
    nxt = next(it, None)
    for d in range(rank):
        if d not in big:
            result.append(d)
        else:
            result.append(nxt)  # type: ignore[arg-type]
            nxt = next(it, None)
    return tuple(result)
