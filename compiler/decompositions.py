"""The decompositions tessera imports through: Inductor's table (without its
fast-random prims), minus the ops that ``tsr`` keeps whole because a whole op
is what a kernel wants (nearest and bilinear upsampling decompose into index
gathers; SiLU and GELU into several elementwise ops that fusion would have to
rediscover), inference BatchNorm (the importer emits the ops of its
decomposition itself: tracing that decomposition cost AOTAutograd ~10 ms a
layer, 0.6 s of ResNet-50's first call), and those whose decompositions need
Inductor itself (``INDUCTOR_ONLY``).

Upsampling also has Python kernels at the ``CompositeImplicitAutograd`` and
``Autograd`` keys that decompose it while AOTAutograd traces, whatever the
table says; :func:`keeping_ops_whole` sets those aside for the duration of a
trace (ATen's own kernels and derivative formulas then apply). A ``.vec``
overload (sizes from scale factors) is traced as its ``.default`` with the
output size computed in Python, so a symbolic size stays symbolic (ATen's C++
kernel would read it as a number, specializing the graph):

    upsample_nearest2d.vec(x, None, [2.0, 2.0])  ->  upsample_nearest2d.default(x, [2*s0, 2*s1], 2.0, 2.0)
"""

from __future__ import annotations

import contextlib
import functools
import traceback
from collections.abc import Iterator

import torch
from torch._C import DispatchKey

aten = torch.ops.aten

KEPT_WHOLE = (
    aten.upsample_nearest1d,
    aten.upsample_nearest2d,
    aten.upsample_nearest3d,
    aten._upsample_nearest_exact1d,  # nearest-exact: diffusers' WAN VAE upsamples with it
    aten._upsample_nearest_exact2d,
    aten._upsample_nearest_exact3d,
    aten.upsample_bilinear2d,
    aten.silu,
    aten.gelu,
    aten._native_batch_norm_legit_no_training,  # the importer expands it: its traced decomposition costs ~10 ms a layer
)
_TRACE_KEYS = (DispatchKey.CompositeImplicitAutograd, DispatchKey.Autograd)


def _kept_overloads() -> list:
    return [getattr(p, o) for p in KEPT_WHOLE for o in p.overloads()]


def raised_by_kept_op(e: BaseException) -> bool:
    """Whether ``e`` was raised inside a call of an op of ``KEPT_WHOLE`` or of
    its backward (``aten.upsample_nearest1d_backward``, whose meta fails on a
    symbolic size list): the failures that tracing with ATen's decompositions
    of those ops avoids. Read from the OpOverload frames of ``e``'s traceback."""
    kept = tuple(p.__name__ for p in KEPT_WHOLE)
    for frame, _ in traceback.walk_tb(e.__traceback__):
        op = frame.f_locals.get("self")
        if isinstance(op, torch._ops.OpOverload) and op.namespace == "aten" and op._opname.startswith(kept):
            return True
    return False


INDUCTOR_ONLY = (
    aten.max_pool2d_with_indices,  # into Inductor's low-memory pooling prims, behind its lowering module
    aten.max_pool3d_with_indices,
    aten.masked_scatter,  # asks Inductor's codegen what its backend can do
)
"""Ops whose Inductor decompositions lean on Inductor itself (its prims, its
lowering or codegen modules): tessera keeps them whole, so its table stands on
its own in a process that imported nothing of Inductor but the table."""


@functools.cache
def _table() -> dict:
    from torch._inductor.decomposition import decompositions  # without Inductor's fast-random prims

    from .conv_backward import convolution_backward

    kept = set(_kept_overloads()) | {getattr(p, o) for p in INDUCTOR_ONLY for o in p.overloads()}
    table = {k: v for k, v in decompositions.items() if k not in kept}
    table[aten.convolution_backward.default] = functools.partial(convolution_backward,
                                                                 otherwise=table.get(aten.convolution_backward.default))
    return table


def decomposition_table() -> dict:
    """A copy of tessera's decomposition table (ATen overload -> decomposition)."""
    return dict(_table())


def _vec_as_default(packet):
    """``packet.vec`` as a call of ``packet.default`` (nearest: ``(x, size, scales)``;
    bilinear: ``(x, size, align_corners, scales)``)."""
    from torch._decomp.decompositions import upsample_compute_output_size

    def vec(x, output_size, *rest):
        *align, scale_factors = rest
        size = upsample_compute_output_size(x.size(), output_size, scale_factors)
        scales = scale_factors if scale_factors else [None] * len(size)
        return packet.default(x, size, *align, *scales)

    return vec


@contextlib.contextmanager
def keeping_ops_whole() -> Iterator[None]:
    """While tracing, route the ops of ``KEPT_WHOLE`` to ATen, not to their
    Python decompositions (a ``.vec`` upsampling to its ``.default``)."""
    saved = []
    for op in _kept_overloads():
        for key in _TRACE_KEYS:
            if key in op.py_kernels:
                saved.append((op, key, op.py_kernels.pop(key)))
                if op._overloadname == "vec":
                    op.py_kernels[key] = _vec_as_default(op._overloadpacket)
        op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, key, kernel in saved:
            op.py_kernels[key] = kernel
            op._dispatch_cache.clear()
