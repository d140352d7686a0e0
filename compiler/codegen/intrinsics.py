"""Calls of LLVM intrinsics overloaded on their first operand's type.

    call_intrinsic(b, "llvm.fmuladd", [x, y, z])  ->  call float @llvm.fmuladd.f32(float, float, float)
    call_intrinsic(b, "llvm.maximum", [u, v])      ->  call <16 x float> @llvm.maximum.v16f32(...)
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir


def call_intrinsic(b: ir.IRBuilder, name: str, args: Sequence[ir.Value], fastmath: Sequence[str] = ()) -> ir.Value:
    t = args[0].type
    fnty = ir.FunctionType(t, [a.type for a in args])
    if isinstance(t, ir.VectorType):  # llvmlite names scalar overloads only
        fn = b.module.declare_intrinsic(f"{name}.v{t.count}{t.element.intrinsic_name}", (), fnty)
    else:
        fn = b.module.declare_intrinsic(name, [t], fnty)
    return b.call(fn, list(args), fastmath=tuple(fastmath))
