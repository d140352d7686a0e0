"""The xDSL context with every dialect tessera reads and writes."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func

from tessera.dialects.tsr import TSR


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TSR):
        ctx.load_dialect(dialect)
    return ctx
