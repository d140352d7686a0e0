"""The xDSL context with every dialect tessera reads and writes."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.gpu import GPU
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.vector import Vector

from tessera.dialects.tsr import TSR


def make_context() -> Context:
    ctx = Context()
    # arith/scf/math/memref/vector/gpu: the kernel IR (docs/kernel-ir.md)
    for dialect in (Builtin, Func, TSR, Arith, Scf, Math, MemRef, Vector, GPU):
        ctx.load_dialect(dialect)
    return ctx
