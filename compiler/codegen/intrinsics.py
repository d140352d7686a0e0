"""Calls of LLVM intrinsics overloaded on their first operand's type.

    call_intrinsic(b, "llvm.fmuladd", [x, y, z])  ->  call float @llvm.fmuladd.f32(float, float, float)
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir


def call_intrinsic(b: ir.IRBuilder, name: str, args: Sequence[ir.Value], fastmath: Sequence[str] = ()) -> ir.Value:
    t = args[0].type
    fnty = ir.FunctionType(t, [a.type for a in args])
    fn = b.module.declare_intrinsic(name, [t], fnty)
    return b.call(fn, list(args), fastmath=tuple(fastmath))
