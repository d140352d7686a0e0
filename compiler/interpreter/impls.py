"""The reference semantics of each ``tsr`` op, as torch calls on logical tensors.

Each implementation takes the op and its operand values (tensors, or Python
numbers for scalars) and returns the logical result(s); the interpreter then
stores every result in the layout and dtype its type declares.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, i1
from xdsl.ir import Operation

from tessera.dialects import tsr
from tessera.dialects.tsr import dtypes
from tessera.dialects.tsr.shapes import DYNAMIC, ints, shape_of

from .. import aten_args
from ..conv_epilogue import ConvEpilogue
from ..host_steps import (
    AtenCall,
    Concat,
    Constant,
    Operand,
    PolyphaseWeight,
    SizeOf,
    Slice,
    Torch,
    View,
    identity,
    scaled_int_mm,
)

Impl = Callable[..., Any]
IMPLS: dict[type[Operation], Impl] = {}


def impl(*classes: type[Operation]):
    def deco(fn: Impl) -> Impl:
        for c in classes:
            IMPLS[c] = fn
        return fn

    return deco


BINDINGS: dict[type[Operation], Callable[[Any, torch.device], Callable[..., Any]]] = {}
"""The ops whose semantics are a plain callable made from the op once (``host_steps``):
the interpreter calls it, and the host program keeps it (it pickles, and runs with no IR)."""


def binds(*classes: type[Operation]):
    """Registers ``binder(op, device) -> callable`` for ``classes``, and their
    reference semantics as that callable."""
    def deco(binder: Callable[[Any, torch.device], Callable[..., Any]]):
        for c in classes:
            BINDINGS[c] = binder
            IMPLS[c] = lambda op, env, *xs, binder=binder: binder(op, env.device)(*xs)
        return binder

    return deco


def _simple(cls: type[Operation], fn: Callable[..., Any]) -> None:
    binds(cls)(lambda op, device, fn=fn: Torch(fn))


for _cls, _fn in {
    tsr.NegOp: torch.neg,
    tsr.ExpOp: torch.exp,
    tsr.LogOp: torch.log,
    tsr.SqrtOp: torch.sqrt,
    tsr.RsqrtOp: torch.rsqrt,
    tsr.SigmoidOp: torch.sigmoid,
    tsr.SiluOp: F.silu,
    tsr.ReluOp: torch.relu,
    tsr.TanhOp: torch.tanh,
    tsr.AbsOp: torch.abs,
    tsr.ErfOp: torch.erf,
    tsr.ReciprocalOp: torch.reciprocal,
    tsr.Log1pOp: torch.log1p,
    tsr.Expm1Op: torch.expm1,
    tsr.FloorOp: torch.floor,
    tsr.CeilOp: torch.ceil,
    tsr.TruncOp: torch.trunc,
    tsr.RoundOp: torch.round,
    tsr.AddOp: torch.add,
    tsr.SubOp: torch.sub,
    tsr.MulOp: torch.mul,
    tsr.DivOp: torch.div,
    tsr.PowOp: torch.pow,
    tsr.MatmulOp: torch.mm,
    tsr.BmmOp: torch.bmm,
    tsr.IntMmOp: torch._int_mm,
    tsr.ScaledIntMmOp: scaled_int_mm,
    tsr.AddmmOp: torch.addmm,
    tsr.ConvertOp: identity,  # the result's type (stored by the caller) does the work
    tsr.RelayoutOp: identity,
}.items():
    _simple(_cls, _fn)


_SIZE_ARITH = {arith.MuliOp: operator.mul, arith.AddiOp: operator.add, arith.SubiOp: operator.sub,
               arith.FloorDivSIOp: operator.floordiv}
for _cls, _fn in _SIZE_ARITH.items():  # the arithmetic of a graph's sizes (Python ints)
    _simple(_cls, _fn)
binds(arith.ConstantOp)(lambda op, device: Constant(op.value.value.data))  # a size or scalar, no IR per call


def _tensor_pair(a: Any, b: Any, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """maximum/minimum want two tensors: a scalar becomes a 0-d tensor."""
    def t(v):
        return v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=like.dtype, device=like.device)

    return t(a), t(b)


@impl(tsr.MaximumOp, tsr.MinimumOp)
def _minmax(op, env, a, b):
    like = a if isinstance(a, torch.Tensor) else b
    fn = torch.maximum if isinstance(op, tsr.MaximumOp) else torch.minimum
    return fn(*_tensor_pair(a, b, like))


@impl(tsr.GeluOp)
def _gelu(op, env, x):
    return F.gelu(x, approximate=op.approximate.data if op.approximate else "none")


_CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


@impl(tsr.CmpOp)
def _cmp(op, env, a, b):
    if not isinstance(a, torch.Tensor):  # scalar OP tensor: flip the comparison
        flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op.predicate.data, op.predicate.data)
        return _CMP[flipped](b, a)
    return _CMP[op.predicate.data](a, b)


@impl(tsr.WhereOp)
def _where(op, env, c, a, b):
    if not isinstance(c, torch.Tensor):
        c = torch.tensor(bool(c))
    return torch.where(c, a, b)


@impl(tsr.ConstantOp)
def _constant(op, env):
    v = op.value
    if isinstance(v, DenseIntOrFPElementsAttr):
        t = v.get_type()
        dtype = dtypes.to_torch(t.get_element_type())
        vals = list(v.get_values())
        if t.get_element_type() == i1:
            vals = [bool(x) for x in vals]
        data = torch.tensor(vals, dtype=dtype, device=env.device)
        shape = t.get_shape()
        # get_values() lists every element, even of a splat; one element broadcasts.
        return data.reshape(()).expand(shape) if data.numel() == 1 else data.reshape(shape)
    return scalar_value(v)


def scalar_value(attr: FloatAttr | IntegerAttr) -> bool | int | float:
    """A scalar constant as a Python number, rounded to its element type."""
    if isinstance(attr, FloatAttr):
        return torch.tensor(attr.value.data, dtype=dtypes.to_torch(attr.type)).item()
    return bool(attr.value.data) if attr.type == i1 else int(attr.value.data)


@impl(tsr.PadOp)
def _pad(op, env, x, value):
    pads: list[int] = []
    for lo, hi in reversed(list(zip(ints(op.low), ints(op.high)))):
        pads += [lo, hi]
    return torch.constant_pad_nd(x, pads, value)


binds(tsr.PermuteOp)(lambda op, device: View("permute", ints(op.dims)))
binds(tsr.ReshapeOp)(lambda op, device: View("reshape", tuple(None if n == DYNAMIC else n
                                                               for n in shape_of(op.result.type))))
binds(tsr.ExpandOp)(lambda op, device: View("expand", tuple(  # a dynamic dim: its size given, or the input's (-1)
    n if n != DYNAMIC else None if op.sizes else -1 for n in shape_of(op.result.type))))
binds(tsr.SliceOp)(lambda op, device: Slice(op.dim.value.data, op.start.value.data, op.end.value.data,
                                            op.step.value.data))
binds(tsr.DimOp)(lambda op, device: SizeOf(op.dim.value.data))
binds(tsr.ConcatOp)(lambda op, device: Concat(op.dim.value.data))
binds(tsr.PolyphaseWeightOp)(lambda op, device: PolyphaseWeight(tuple(op.dims())))


@impl(tsr.ConvOp)
def _conv(op, env, x, w, *operands):
    epilogue = ConvEpilogue.of(op)
    b, r = epilogue.split(operands)
    y = torch.ops.aten.convolution(
        x, w, b, list(ints(op.stride)), list(ints(op.padding)), list(ints(op.dilation)),
        False, [0] * (x.dim() - 2), op.groups.value.data,
    )
    return epilogue.apply(y, r)


def _reduce_args(op) -> tuple[list[int], bool]:
    return list(op.reduced_dims()), bool(op.keepdim.value.data)


_REDUCTIONS = {tsr.SumOp: torch.sum, tsr.MeanOp: torch.mean, tsr.AmaxOp: torch.amax, tsr.AminOp: torch.amin}


@impl(*_REDUCTIONS)
def _reduce(op, env, x):
    dims, keep = _reduce_args(op)
    return _REDUCTIONS[type(op)](x, dims, keepdim=keep)


@impl(tsr.VarOp)
def _var(op, env, x):
    dims, keep = _reduce_args(op)
    return torch.var(x, dims, correction=op.correction.value.data, keepdim=keep)


@impl(tsr.UpsampleOp)
def _upsample(op, env, x):
    size = list(shape_of(op.result.type)[2:])
    nsp = len(size)
    scales = list(op.scales.get_values()) if op.scales is not None else [None] * nsp
    size = [int(x.shape[2 + i] * scales[i]) if n == DYNAMIC else n for i, n in enumerate(size)]  # a dynamic size: n * scale
    if op.mode.data == "bilinear":
        align = bool(op.align_corners.value.data) if op.align_corners is not None else False
        return torch.ops.aten.upsample_bilinear2d.default(x, size, align, *scales)
    fn = {1: torch.ops.aten.upsample_nearest1d, 2: torch.ops.aten.upsample_nearest2d, 3: torch.ops.aten.upsample_nearest3d}[nsp]
    return fn.default(x, size, *scales)


@impl(tsr.PolyphaseInterleaveOp)
def _polyphase_interleave(op, env, c):
    scales, shifts = ints(op.scales), op.dim_shifts()
    typed = shape_of(op.result.type)  # a dynamic dim: each phase holds its input's n - shift rows
    out_shape = [c.shape[0], typed[1], *(s * (n - max(sh)) if m == DYNAMIC else m
                                         for s, sh, n, m in zip(scales, shifts, c.shape[2:], typed[2:]))]
    out = c.new_empty(out_shape)
    channels = out_shape[1]
    for p, phase in enumerate(itertools.product(*(range(s) for s in scales))):
        dst = [slice(None), slice(None)] + [slice(a, None, s) for a, s in zip(phase, scales)]
        src = [slice(None), slice(p * channels, (p + 1) * channels)] + [
            slice(sh[a], sh[a] + n // s) for a, s, sh, n in zip(phase, scales, shifts, out_shape[2:])]
        out[tuple(dst)] = c[tuple(src)]
    return out


@binds(tsr.AtenCallOp)
def _aten_call(op, device):
    """The ATen op on its decoded arguments (``device`` replaces recorded ones)."""
    operands = [Operand(i) for i in range(len(op.operands))]
    args = aten_args.decode(op.args, operands, device)
    kwargs = {k: aten_args.decode(v, operands, device) for k, v in op.kwargs.data.items()} if op.kwargs else {}
    return AtenCall(op.callee.data, args, kwargs, single=len(op.outs) == 1)


@impl(tsr.FusedOp)
def _fused(op, env, *inputs):
    """Runs the body op by op, as the interpreter runs a function: each result
    is stored in the layout and dtype its type declares."""
    from xdsl.dialects.builtin import TensorType

    from tessera.compiler.placements import in_layout

    values: dict = dict(zip(op.body.block.args, inputs))
    for inner in op.body.block.ops:
        if isinstance(inner, tsr.YieldOp):
            out = tuple(values[v] for v in inner.values)
            return out if len(out) != 1 else out[0]
        fn = IMPLS.get(type(inner))
        if fn is None:
            from . import InterpreterError

            raise InterpreterError(f"no reference semantics for '{inner.name}' in a tsr.fused body")
        res = fn(inner, env, *(values[v] for v in inner.operands))
        for r, v in zip(inner.results, res if isinstance(res, tuple) else (res,), strict=True):
            values[r] = in_layout(v, r.type) if isinstance(r.type, TensorType) else v
    raise AssertionError("verified tsr.fused bodies end with tsr.yield")


@impl(tsr.LaunchOp)
def _launch(op, env, *inputs):
    from ..ir_io import op_location
    from . import InterpreterError

    raise InterpreterError(
        f"tsr.launch @{op.callee.root_reference.data} runs a compiled kernel, which the reference "
        "interpreter does not have; interpret the module of the `fused` stage instead",
        op_location(op),
    )
