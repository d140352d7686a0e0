"""Hand-written kernel IR for the codegen and runtime tests.

    text = kernel("add", [("x", "memref<4x8xf32>"), ("y", "memref<4x8xf32>")], outputs=[1],
                  grid=[4, 8], body='''
        %v = memref.load %x[%i0, %i1] : memref<4x8xf32>
        memref.store %v, %y[%i0, %i1] : memref<4x8xf32>''')
    module = compile_kernels(parse_kernels(text), cache=None)

``scf.parallel`` has no custom syntax in xDSL 0.74, so :func:`kernel` writes it
in the generic form; its induction variables are ``%i0, %i1, ...``, and the
constants ``%c0``, ``%c1`` are defined for the body.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ModuleOp

from tessera.compiler.build import compile_kernels
from tessera.compiler.ir_io import parse_module, verify_module
from tessera.runtime.module import Module


def memref(shape: Sequence[int], elem: str, strides: Sequence[int] | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    layout = f", strided<[{', '.join(str(s) for s in strides)}]>" if strides is not None else ""
    return f"memref<{dims}x{elem}{layout}>"


def kernel(name: str, args: Sequence[tuple[str, str]], outputs: Sequence[int], grid: Sequence[int], body: str,
           arg_attrs: dict[int, str] | None = None) -> str:
    arg_attrs = arg_attrs or {}
    params = ", ".join(f"%{n}: {t}" + (f" {{{arg_attrs[i]}}}" if i in arg_attrs else "") for i, (n, t) in enumerate(args))
    ivs = [f"%i{d}" for d in range(len(grid))]
    bounds = "".join(f"  %g{d} = arith.constant {g} : index\n" for d, g in enumerate(grid))
    r = len(grid)
    operands = ", ".join(["%c0"] * r + [f"%g{d}" for d in range(r)] + ["%c1"] * r)
    return f"""
func.func @{name}({params}) attributes {{tsr.kernel, tsr.outputs = array<i64: {', '.join(map(str, outputs))}>}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{bounds}  "scf.parallel"({operands}) <{{operandSegmentSizes = array<i32: {r}, {r}, {r}, 0>}}> ({{
  ^bb0({', '.join(f'{iv}: index' for iv in ivs)}):
{body}
    scf.reduce
  }}) : ({', '.join(['index'] * 3 * r)}) -> ()
  func.return
}}"""


def parse_kernels(*funcs: str) -> ModuleOp:
    module = parse_module("builtin.module {\n" + "\n".join(funcs) + "\n}", "<kernel test>")
    verify_module(module)
    return module


def load(*funcs: str, features: str | None = None) -> Module:
    return compile_kernels(parse_kernels(*funcs), features=features, cache=None)


def unary_kernel(op: str, n: int, elem: str = "f32") -> str:
    """``y[i] = op(x[i])`` over a 1-D grid of ``n``."""
    t = memref([n], elem)
    return kernel("unary", [("x", t), ("y", t)], [1], [n], f"""
    %v = memref.load %x[%i0] : {t}
    %r = {op} %v : {elem}
    memref.store %r, %y[%i0] : {t}""")


def ulp_error(actual: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """|actual - reference| in units of the f32 spacing at the reference (float64 in, float64 out)."""
    ref32 = reference.float().abs()
    spacing = (torch.nextafter(ref32, torch.tensor(float("inf"))) - ref32).double()
    return (actual.double() - reference).abs() / spacing


def graph_inputs(module: ModuleOp, shape: Sequence[int], seed: int) -> list:
    """Random inputs of a tsr graph's ``@forward``, each ``?`` dim taken from ``shape``, in the
    layout its type names."""
    from tessera.compiler.placements import in_layout

    gen = torch.Generator().manual_seed(seed)
    fn = next(iter(module.body.block.ops))
    out = []
    for t in fn.function_type.inputs.data:
        dims = [n if n >= 0 else shape[d] for d, n in enumerate(t.get_shape())]
        out.append(in_layout(torch.randn(dims, generator=gen), t))
    return out
