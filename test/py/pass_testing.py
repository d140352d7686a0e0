"""Differential testing of passes: a module interpreted before and after a pass
gives the same outputs on random inputs.

    after = check_pass(parse(TEXT), "cast-constants")   # verified, outputs compared
    assert_same_outputs(before, after, rtol=1e-2)        # or step by step

The module is cloned before the pass runs, so ``before`` stays as it was.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from tessera.compiler.context import make_context
from tessera.compiler.interpreter import find_function, interpret
from tessera.compiler.ir_io import parse_module, print_module, verify_module
from tessera.compiler.pass_pipeline import build_pipeline
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.layout import layout_of, strides_for

from conftest import assert_same_strides, random_tensor

# Relative tolerance of each float dtype (a few ulps); integers and bools compare exactly.
TOLERANCES = {torch.float64: 1e-9, torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def function_names(module: ModuleOp) -> list[str]:
    return [op.sym_name.data for op in module.walk() if isinstance(op, func.FuncOp)]


def parse(text: str) -> ModuleOp:
    """A verified module from IR text."""
    module = parse_module(text, "test.mlir")
    verify_module(module)
    return module


def tensor_type(shape: Sequence[int], elem: str = "f32", layout: Sequence[int] | str | None = None) -> str:
    """``tensor<2x3xf32, #tsr.layout<[1, 0]>>``; the identity layout by default,
    a named one (``"nhwc"``) when ``layout`` is a string."""
    perm = list(range(len(shape))) if layout is None else layout
    enc = perm if isinstance(perm, str) else "[" + ", ".join(map(str, perm)) + "]"
    return f"tensor<{''.join(f'{s}x' for s in shape)}{elem}, #tsr.layout<{enc}>>"


def random_inputs(module: ModuleOp, seed: int = 0, function: str = "forward") -> list[torch.Tensor]:
    """Random tensors for ``@function``'s arguments, in their declared dtype and
    layout, with no zero element (ints from randint, bools random with at least one true)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for arg in find_function(module, function).body.block.args:
        shape = tuple(arg.type.get_shape())
        dtype = dtypes.to_torch(arg.type.get_element_type())
        x = random_tensor(shape, dtype, strides_for(shape, layout_of(arg.type)), gen)
        if dtype == torch.bool:
            x[(0,) * x.dim()] = True
        else:
            x[x == 0] = 1
        out.append(x)
    return out


def apply_pass(module: ModuleOp, spec: str) -> ModuleOp:
    """A clone of ``module`` after the pipeline ``spec`` (``"cse,cast-constants{policy=native}"``), verified."""
    after = module.clone()
    build_pipeline(spec).apply(make_context(), after)
    verify_module(after)
    return after


def assert_same_outputs(before: ModuleOp, after: ModuleOp, atol: float | None = None, rtol: float | None = None,
                        inputs: Sequence[torch.Tensor] | None = None, seed: int = 0,
                        function: str = "forward", any_layout: Collection[int] = ()) -> list[torch.Tensor]:
    """Both modules give the same outputs on ``inputs`` (random ones from ``seed``
    by default): same dtypes, shapes and layouts (but the outputs ``any_layout``);
    exact integers, bools and sizes, and floats within ``rtol`` (default: :data:`TOLERANCES`)
    and ``atol`` (default: ``rtol`` times the largest magnitude of the output, at least 1)."""
    if inputs is None:
        inputs = random_inputs(before, seed, function)
    expected = interpret(before, *(x.clone() for x in inputs), function=function)
    got = interpret(after, *(x.clone() for x in inputs), function=function)
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        what = f"output #{i}"
        if not isinstance(e, torch.Tensor):  # a size (i64)
            assert g == e, f"{what}: {g} != {e}"
            continue
        assert (g.dtype, g.shape) == (e.dtype, e.shape), f"{what}: {g.dtype}{list(g.shape)} != {e.dtype}{list(e.shape)}"
        if i not in any_layout:
            assert_same_strides(g, e, what)
        if not e.dtype.is_floating_point:
            assert torch.equal(g, e), f"{what}: values differ\n{g}\n{e}"
            continue
        r = TOLERANCES[e.dtype] if rtol is None else rtol
        scale = float(e.abs().nan_to_num(0, 0, 0).max()) if e.numel() else 0.0
        a = r * max(1.0, scale) if atol is None else atol
        torch.testing.assert_close(g, e, atol=a, rtol=r, equal_nan=True, msg=lambda m: f"{what}: {m}")
    return got


def check_pass(module: ModuleOp, spec: str, seeds: Sequence[int] = (0, 1, 2),
               atol: float | None = None, rtol: float | None = None,
               functions: Sequence[str] = ("forward",), any_layout: Collection[int] = ()) -> ModuleOp:
    """Run ``spec`` on a clone of ``module``, check the outputs of each of
    ``functions`` on several random inputs (the outputs ``any_layout`` in any
    layout) and that a second run changes nothing; the module after the pass."""
    after = apply_pass(module, spec)
    for fn in functions:
        for seed in seeds:
            assert_same_outputs(module, after, atol, rtol, seed=seed, function=fn, any_layout=any_layout)
    assert print_module(apply_pass(after, spec)) == print_module(after), f"{spec} is not idempotent"
    return after
