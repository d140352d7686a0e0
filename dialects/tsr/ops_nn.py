"""``tsr`` ops with a library or a dedicated kernel behind them: convolution,
matrix products, the int8 GEMM, reductions and upsampling."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i8,
    i32,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tessera.dialects.conv_sizes import conv_output_size

from . import dtypes
from .shapes import (
    DYNAMIC,
    I64Array,
    broadcast_shapes,
    check_values_layouts,
    dim_of,
    elem_of,
    expect_rank,
    expect_same_elem,
    expect_shape,
    ints,
    is_static,
    normalize_dims,
    same_dim,
    shape_of,
    show,
)

F64Array = DenseArrayBase.constr(f64)


CONV_ACTIVATIONS = ("relu", "relu6", "silu")
"""The activations a ``tsr.conv`` may apply to its result."""


def split_conv_epilogue(values: Sequence, has_residual: bool) -> tuple:
    """``(bias, residual)`` among a ``tsr.conv``'s operands after the weight
    (SSA values, or the tensors a call receives for them), None where absent."""
    residual = values[-1] if has_residual and values else None
    rest = values[:-1] if has_residual else values
    return (rest[0] if rest else None), residual


@irdl_op_definition
class ConvOp(IRDLOperation):
    """Convolution, 1-D to 3-D (rank 3 to 5), with an optional bias, an optional
    residual added to its result and an optional activation applied last
    (``fuse-conv-residuals`` and ``fuse-conv-epilogues`` put them there; the
    library or kernel computing the conv applies them before storing):
    ``result = activation(conv(x, w) + bias + residual)``. The weight is
    ``[C_out, C_in/groups, k...]`` logically, whatever its layout; the residual
    has the result's type.

        %y = tsr.conv %x, %w, %b {stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>,
               dilation = array<i64: 1, 1, 1>, groups = 1 : i64, activation = "relu"}
             : (tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>, tensor<64x64x3x3x3xf32>, tensor<64xf32>)
            -> tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>
        %z = tsr.conv %x, %w, %b, %r {..., residual}    // the last operand is the residual
    """

    name = "tsr.conv"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    epilogue = var_operand_def(TensorType)
    """The bias and then the residual, each when present."""
    stride = prop_def(I64Array)
    padding = prop_def(I64Array)
    dilation = prop_def(I64Array)
    groups = prop_def(IntegerAttr)
    activation = opt_prop_def(StringAttr)
    residual = opt_prop_def(UnitAttr)
    """Set when the last epilogue operand is a residual."""
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $weight (`,` $epilogue^)? attr-dict `:` functional-type(operands, results)"

    @classmethod
    def with_epilogue(cls, input: SSAValue, weight: SSAValue, bias: SSAValue | None, residual: SSAValue | None,
              result_type: TensorType, properties: dict) -> ConvOp:
        """A conv with these operands (the ``residual`` property set to match)
        and ``properties`` otherwise (a rewritten conv passes its own)."""
        props = {k: v for k, v in properties.items() if k != "residual"}
        if residual is not None:
            props["residual"] = UnitAttr()
        return cls.create(operands=[input, weight, *(v for v in (bias, residual) if v is not None)],
                          result_types=[result_type], properties=props)

    @property
    def bias(self) -> SSAValue | None:
        return split_conv_epilogue(self.epilogue, self.residual is not None)[0]

    @property
    def residual_input(self) -> SSAValue | None:
        return split_conv_epilogue(self.epilogue, self.residual is not None)[1]

    def activation_name(self) -> str | None:
        return self.activation.data if self.activation is not None else None

    def verify_(self) -> None:
        check_values_layouts(list(self.operands) + [self.result], "conv")
        if self.activation_name() not in (None, *CONV_ACTIVATIONS):
            raise VerifyException(f"activation must be one of {', '.join(CONV_ACTIVATIONS)}, got \"{self.activation_name()}\"")
        if len(self.epilogue) - (self.residual is not None) not in (0, 1):
            raise VerifyException(f"takes an optional bias{' and the residual' if self.residual else ''} after the weight, "
                                  f"got {len(self.epilogue)} more operands")
        if self.residual_input is not None and self.residual_input.type != self.result.type:
            raise VerifyException(f"the residual must have the result's type {self.result.type}, got {self.residual_input.type}")
        x, w = shape_of(self.input.type), shape_of(self.weight.type)
        expect_rank(self.input.type, (3, 4, 5), "input")
        if len(w) != len(x):
            raise VerifyException(f"weight rank {len(w)} differs from input rank {len(x)}")
        if x[1] == DYNAMIC:
            raise VerifyException(f"input channels must be static, got {self.input.type}")
        if not is_static(w):
            raise VerifyException(f"the weight's shape must be static, got {self.weight.type}")
        nsp = len(x) - 2
        stride, padding, dilation = ints(self.stride), ints(self.padding), ints(self.dilation)
        for nm, arr in (("stride", stride), ("padding", padding), ("dilation", dilation)):
            if len(arr) != nsp:
                raise VerifyException(f"{nm} needs {nsp} entries, got {len(arr)}")
        if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p in padding):
            raise VerifyException("stride and dilation must be >= 1, padding >= 0")
        g = self.groups.value.data
        if g < 1 or x[1] % g or w[0] % g:
            raise VerifyException(f"groups={g} must divide C_in={x[1]} and C_out={w[0]}")
        if w[1] * g != x[1]:
            raise VerifyException(f"weight has {w[1]} input channels per group, expected {x[1] // g}")
        for v in (self.weight, self.bias, self.result):
            if v is not None:
                expect_same_elem(self.input.type, v.type, "conv")
        if self.bias is not None:
            expect_shape(shape_of(self.bias.type), [w[0]], "bias")
        out = [x[0], w[0]]
        for i in range(nsp):
            o = dim_of(lambda n, i=i: conv_output_size(n, w[2 + i], stride[i], padding[i], dilation[i]), x[2 + i])
            if o != DYNAMIC and o < 1:
                raise VerifyException(f"kernel does not fit spatial dim {i}: output size {o}")
            out.append(o)
        expect_shape(shape_of(self.result.type), out, "result")


class _Reduction(IRDLOperation):
    input = operand_def(TensorType)
    dims = prop_def(I64Array)
    keepdim = prop_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def reduced_dims(self) -> tuple[int, ...]:
        rank = len(shape_of(self.input.type))
        dims = ints(self.dims)
        return tuple(range(rank)) if not dims else normalize_dims(dims, rank, self.name)

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], self.name)
        shape = shape_of(self.input.type)
        red = self.reduced_dims()
        keep = bool(self.keepdim.value.data)
        out = [1 if d in red else s for d, s in enumerate(shape) if keep or d not in red]
        expect_shape(shape_of(self.result.type), out, "result")
        if self.name in ("tsr.mean", "tsr.var") and not dtypes.is_float(elem_of(self.input.type)):
            raise VerifyException(f"{self.name} needs a floating-point operand")


@irdl_op_definition
class SumOp(_Reduction):
    """Sum over ``dims`` (all dims when empty).

        %s = tsr.sum %x {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
    """

    name = "tsr.sum"


@irdl_op_definition
class MeanOp(_Reduction):
    """Mean over ``dims``.

        %m = tsr.mean %x {dims = array<i64: 1>, keepdim = false} : (tensor<2x8xf32>) -> tensor<2xf32>
    """

    name = "tsr.mean"


@irdl_op_definition
class AmaxOp(_Reduction):
    """Maximum over ``dims``.

        %m = tsr.amax %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "tsr.amax"


@irdl_op_definition
class AminOp(_Reduction):
    """Minimum over ``dims``.

        %m = tsr.amin %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    """

    name = "tsr.amin"


@irdl_op_definition
class VarOp(_Reduction):
    """Variance over ``dims`` with Bessel ``correction`` (0: population variance),
    as GroupNorm/LayerNorm decompose to.

        %v = tsr.var %x {dims = array<i64: 2, 3>, keepdim = true, correction = 0.0 : f64}
               : (tensor<1x4x4x256xf32>) -> tensor<1x4x1x1xf32>
    """

    name = "tsr.var"
    correction = prop_def(FloatAttr)


def _matmul_shape(op: IRDLOperation, lhs, rhs, batched: bool = False) -> list[int]:
    """Check a (batched) matrix product's operand ranks and sizes; its result shape."""
    rank = 3 if batched else 2
    expect_rank(lhs.type, (rank,), "lhs")
    expect_rank(rhs.type, (rank,), "rhs")
    a, b = shape_of(lhs.type), shape_of(rhs.type)
    if not same_dim(a[-1], b[-2]) or not all(same_dim(p, q) for p, q in zip(a[:-2], b[:-2])):
        what = "batch or contraction" if batched else "contraction"
        raise VerifyException(f"{what} sizes differ: {show(a)} x {show(b)}")
    return [*a[:-1], b[-1]]


def _check_float_or_same(op: IRDLOperation, a, b, r) -> None:
    expect_same_elem(a.type, b.type, op.name)
    expect_same_elem(a.type, r.type, op.name)


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """Matrix product ``[M,K] x [K,N] -> [M,N]``.

        %c = tsr.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32, #tsr.layout<[1, 0]>>) -> tensor<8x4xf32>
    """

    name = "tsr.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.lhs, self.rhs, self.result], self.name)
        expect_shape(shape_of(self.result.type), _matmul_shape(self, self.lhs, self.rhs), "result")
        _check_float_or_same(self, self.lhs, self.rhs, self.result)


@irdl_op_definition
class BmmOp(IRDLOperation):
    """Batched matrix product ``[B,M,K] x [B,K,N] -> [B,M,N]``.

        %c = tsr.bmm %a, %b : (tensor<2x8x16xf32>, tensor<2x16x4xf32>) -> tensor<2x8x4xf32>
    """

    name = "tsr.bmm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.lhs, self.rhs, self.result], self.name)
        expect_shape(shape_of(self.result.type), _matmul_shape(self, self.lhs, self.rhs, batched=True), "result")
        _check_float_or_same(self, self.lhs, self.rhs, self.result)


@irdl_op_definition
class AddmmOp(IRDLOperation):
    """``bias + a @ b`` with ``bias`` broadcast to ``[M,N]`` (a linear layer).

        %y = tsr.addmm %b, %x, %wt : (tensor<4xf32>, tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    """

    name = "tsr.addmm"
    bias = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$bias `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts(list(self.operands) + [self.result], self.name)
        out = tuple(_matmul_shape(self, self.lhs, self.rhs))
        bias = broadcast_shapes(shape_of(self.bias.type), out)
        if len(bias) != len(out) or not all(same_dim(a, b) for a, b in zip(bias, out)):
            raise VerifyException(f"bias of shape {show(shape_of(self.bias.type))} does not broadcast to {show(out)}")
        expect_shape(shape_of(self.result.type), out, "result")
        _check_float_or_same(self, self.lhs, self.rhs, self.result)
        expect_same_elem(self.bias.type, self.result.type, self.name)


def _check_int8_operands(op: IRDLOperation, what: str) -> None:
    """The int8 GEMMs take ``i8`` or ``ui8`` A times ``i8`` B."""
    if elem_of(op.lhs.type) not in (i8, dtypes.ui8) or elem_of(op.rhs.type) != i8:
        raise VerifyException(f"{what} takes i8 or ui8 x i8, got {elem_of(op.lhs.type)} x {elem_of(op.rhs.type)}")


@irdl_op_definition
class IntMmOp(IRDLOperation):
    """Exact int8 GEMM: ``[M,K] (i8 or ui8) x [K,N] (i8) -> [M,N] i32``.

        %c = tsr.int_mm %a, %b : (tensor<32x64xui8>, tensor<64x16xi8>) -> tensor<32x16xi32>
    """

    name = "tsr.int_mm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.lhs, self.rhs, self.result], self.name)
        out = _matmul_shape(self, self.lhs, self.rhs)
        _check_int8_operands(self, "int_mm")
        if elem_of(self.result.type) != i32:
            raise VerifyException(f"int_mm gives i32, got {elem_of(self.result.type)}")
        expect_shape(shape_of(self.result.type), out, "result")


@irdl_op_definition
class ScaledIntMmOp(IRDLOperation):
    """A quantized linear layer's GEMM with its epilogue: the exact int32 product
    of ``tsr.int_mm``, then ``float(acc) * a_scale[m] * b_scale[n] (+ bias[n])``
    in float32, each step rounded as eager's separate ops round it.

        %y = tsr.scaled_int_mm %a, %b, %sa, %sb, %bias
             : (tensor<32x64xui8>, tensor<64x16xi8>, tensor<32xf32>, tensor<16xf32>, tensor<16xf32>)
            -> tensor<32x16xf32>

    ``fuse-int-mm-epilogues`` forms it from ``int_mm -> convert -> mul -> mul (-> add)``.
    """

    name = "tsr.scaled_int_mm"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    a_scale = operand_def(TensorType)
    b_scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs `,` $a_scale `,` $b_scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts(list(self.operands) + [self.result], self.name)
        m, n = _matmul_shape(self, self.lhs, self.rhs)
        _check_int8_operands(self, "scaled_int_mm")
        vectors = [(self.a_scale, m, "a_scale"), (self.b_scale, n, "b_scale")]
        if self.bias is not None:
            vectors.append((self.bias, n, "bias"))
        for v, size, what in vectors:
            expect_shape(shape_of(v.type), (size,), what)
            if elem_of(v.type) != f32:
                raise VerifyException(f"scaled_int_mm's {what} must be f32, got {elem_of(v.type)}")
        if elem_of(self.result.type) != f32:
            raise VerifyException(f"scaled_int_mm gives f32, got {elem_of(self.result.type)}")
        expect_shape(shape_of(self.result.type), (m, n), "result")


def aten_nearest_step(n_in: int, n_out: int, scale: float | None) -> np.float32:
    """ATen's ``compute_scales_value<float>``: the source step per output index."""
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n_in) / np.float32(n_out)


def nearest_sources(n_in: int, n_out: int, scale: float | None) -> np.ndarray:
    """ATen's ``nearest_idx`` for every output index: ``min(floor(i * step), n_in - 1)``
    with ``step`` an f32."""
    step = aten_nearest_step(n_in, n_out, scale)
    return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * step).astype(np.int64), n_in - 1)


MAX_DYNAMIC_REPEAT = 32
"""The largest whole scale a nearest upsample of a dynamic size is taken to repeat
by (``y // s`` as ATen's f32 index math gives it; 41 is the first that differs)."""


def nearest_repeat(n_in: int, n_out: int, scale: float | None) -> int | None:
    """How many times ATen's nearest upsampling repeats each element when it is
    a whole number for every output index (``y -> y // r`` exactly as its f32
    index math gives it); else None. A dynamic size repeats by a whole ``scale``
    up to :data:`MAX_DYNAMIC_REPEAT` (``floor(y * f32(1/s)) == y // s`` for every ``y < 2**22``: checked)."""
    if DYNAMIC in (n_in, n_out):
        whole = scale is not None and float(scale).is_integer() and 1 <= scale <= MAX_DYNAMIC_REPEAT
        return int(scale) if whole else None
    if n_out % n_in:
        return None
    r = n_out // n_in
    return r if np.array_equal(nearest_sources(n_in, n_out, scale), np.arange(n_out) // r) else None


@irdl_op_definition
class UpsampleOp(IRDLOperation):
    """Spatial upsampling (nearest, or bilinear for 2-D) to the result's shape.
    ``scales`` (optional) are the factors the model asked for; ATen derives the
    source index from them when given.

        %u = tsr.upsample %x {mode = "nearest", scales = array<f64: 2.0, 2.0, 2.0>}
             : (tensor<1x8x4x8x8xf32>) -> tensor<1x8x8x16x16xf32>
    """

    name = "tsr.upsample"
    input = operand_def(TensorType)
    mode = prop_def(StringAttr)
    align_corners = opt_prop_def(BoolAttr)
    scales = opt_prop_def(F64Array)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def repeats(self) -> list[int] | None:
        """Nearest mode where each spatial dim repeats every element a whole
        number of times (``y -> y // r``, exactly as ATen's float index math
        gives it): the repeat counts; else None."""
        if self.mode.data != "nearest":
            return None
        x, y = shape_of(self.input.type)[2:], shape_of(self.result.type)[2:]
        scales = list(self.scales.get_values()) if self.scales is not None else [None] * len(x)
        out = [nearest_repeat(n_in, n_out, scale) for n_in, n_out, scale in zip(x, y, scales)]
        return None if None in out else out

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], self.name)
        x, y = shape_of(self.input.type), shape_of(self.result.type)
        expect_rank(self.input.type, (3, 4, 5), "input")
        mode = self.mode.data
        if mode not in ("nearest", "bilinear"):
            raise VerifyException(f"mode must be \"nearest\" or \"bilinear\", got \"{mode}\"")
        if mode == "bilinear" and len(x) != 4:
            raise VerifyException("bilinear upsampling is 2-D (rank-4 input)")
        if mode == "nearest" and self.align_corners is not None:
            raise VerifyException("align_corners applies to bilinear mode only")
        if len(y) != len(x) or not all(same_dim(a, b) for a, b in zip(y[:2], x[:2])):
            raise VerifyException(f"result {show(y)} must keep batch and channels of {show(x)}")
        if self.scales is not None and len(self.scales.get_values()) != len(x) - 2:
            raise VerifyException(f"scales needs {len(x) - 2} entries")
        expect_same_elem(self.input.type, self.result.type, self.name)
        if not dtypes.is_float(elem_of(self.input.type)):
            raise VerifyException("upsample needs a floating-point tensor")


REDUCTION_OPS = (SumOp, MeanOp, AmaxOp, AminOp, VarOp)
NN_OPS = (ConvOp, MatmulOp, BmmOp, AddmmOp, IntMmOp, ScaledIntMmOp, UpsampleOp, *REDUCTION_OPS)
