"""``tsr`` ops that move data without arithmetic: pad, permute, reshape,
expand, slice, concat. All change the *logical* shape; none is a layout change
(that is ``tsr.relayout``)."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from . import dtypes
from .shapes import (
    DYNAMIC,
    I64Array,
    check_values_layouts,
    dim_of,
    expect_same_elem,
    expect_shape,
    ints,
    is_static,
    normalize_dims,
    numel,
    same_dim,
    shape_of,
    show,
)


@irdl_op_definition
class PadOp(IRDLOperation):
    """Constant pad: ``low[d]``/``high[d]`` elements of ``value`` before/after dim d
    (a negative amount crops). The causal time pad of a video VAE:

        %f = tsr.constant 0.000000e+00 : f32
        %p = tsr.pad %x, %f {low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>}
               : (tensor<1x64x4x32x32xf32, #tsr.layout<ndhwc>>, f32)
              -> tensor<1x64x6x34x34xf32, #tsr.layout<ndhwc>>
    """

    name = "tsr.pad"
    input = operand_def(TensorType)
    value = operand_def()
    low = prop_def(I64Array)
    high = prop_def(I64Array)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $value attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "pad")
        if self.value.type not in dtypes.SUPPORTED:
            raise VerifyException(f"pad value must be a scalar, got {self.value.type}")
        shape = shape_of(self.input.type)
        low, high = ints(self.low), ints(self.high)
        if len(low) != len(shape) or len(high) != len(shape):
            raise VerifyException(f"low/high need {len(shape)} entries, got {len(low)}/{len(high)}")
        out = [dim_of(lambda n, lo=lo, hi=hi: n + lo + hi, s) for s, lo, hi in zip(shape, low, high)]
        if any(d < 0 and d != DYNAMIC for d in out):
            raise VerifyException(f"padding crops below zero: result shape would be {out}")
        expect_shape(shape_of(self.result.type), out, "result")
        expect_same_elem(self.input.type, self.result.type, "pad")


@irdl_op_definition
class PermuteOp(IRDLOperation):
    """Logical transpose: result dim i is input dim ``dims[i]``.

        %t = tsr.permute %x {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    name = "tsr.permute"
    input = operand_def(TensorType)
    dims = prop_def(I64Array)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "permute")
        shape = shape_of(self.input.type)
        dims = ints(self.dims)
        if sorted(dims) != list(range(len(shape))):
            raise VerifyException(f"dims {list(dims)} are not a permutation of 0..{len(shape) - 1}")
        expect_shape(shape_of(self.result.type), [shape[d] for d in dims], "result")
        expect_same_elem(self.input.type, self.result.type, "permute")


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """Same elements in logical row-major order, another shape. A dynamic dim
    of the result takes its size from ``sizes``, one ``i64`` per ``?`` in order
    (``-1``: the size the others leave, as ATen's):

        %r = tsr.reshape %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x32xf32>
        %g = tsr.reshape %y, %n, %hw : (tensor<?x16x?x?xf32>, i64, i64) -> tensor<?x4x4x?xf32>
    """

    name = "tsr.reshape"
    input = operand_def(TensorType)
    sizes = var_operand_def(i64)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input (`,` $sizes^)? attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "reshape")
        a, b = shape_of(self.input.type), shape_of(self.result.type)
        if is_static(a) and is_static(b) and numel(a) != numel(b):
            raise VerifyException(f"cannot reshape {show(a)} ({numel(a)} elements) to {show(b)} ({numel(b)})")
        for x, y in ((a, b), (b, a)):  # a static side's elements fill the other's known dims a whole number of times
            if is_static(x) and not is_static(y) and numel(y) and numel(x) % numel(y):
                raise VerifyException(f"cannot reshape {show(a)} to {show(b)}: {numel(x)} elements are not "
                                      f"a multiple of {numel(y)}")
        expect_same_elem(self.input.type, self.result.type, "reshape")
        if len(self.sizes) != b.count(DYNAMIC):
            raise VerifyException(f"a reshape to {show(b)} takes {b.count(DYNAMIC)} sizes (one per '?'), "
                                  f"got {len(self.sizes)}")


@irdl_op_definition
class ExpandOp(IRDLOperation):
    """Broadcast size-1 dims (and new leading dims) to the result shape. A
    dynamic dim of the result is its input's, or with ``sizes`` (one ``i64``
    per ``?`` in order, ``-1``: the input's) a size known at run time:

        %e = tsr.expand %b : (tensor<1x64x1x1xf32>) -> tensor<2x64x8x8xf32>
        %f = tsr.expand %x, %n, %n : (tensor<?x1xf32>, i64, i64) -> tensor<?x?xf32>
    """

    name = "tsr.expand"
    input = operand_def(TensorType)
    sizes = var_operand_def(i64)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input (`,` $sizes^)? attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "expand")
        a, b = shape_of(self.input.type), shape_of(self.result.type)
        if len(a) > len(b) or any(x != 1 and not same_dim(x, y) for x, y in zip(a, b[len(b) - len(a):])):
            raise VerifyException(f"cannot expand {show(a)} to {show(b)}")
        expect_same_elem(self.input.type, self.result.type, "expand")
        if len(self.sizes) not in (0, b.count(DYNAMIC)):
            raise VerifyException(f"an expand to {show(b)} takes no sizes or {b.count(DYNAMIC)} (one per '?'), "
                                  f"got {len(self.sizes)}")


@irdl_op_definition
class SliceOp(IRDLOperation):
    """Elements ``start, start+step, ... < end`` of dim ``dim`` (``aten.slice.Tensor``).
    Of a dynamic dim, the bounds are Python's: negative from the end, clamped
    to the size at run time (``x[:, :, 1:]``: ``end = 2**63 - 1``).

        %s = tsr.slice %x {dim = 2 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64}
               : (tensor<1x8x8xf32>) -> tensor<1x8x3xf32>
    """

    name = "tsr.slice"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    start = prop_def(IntegerAttr)
    end = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], "slice")
        shape = shape_of(self.input.type)
        if not shape:
            raise VerifyException("cannot slice a rank-0 tensor")
        (dim,) = normalize_dims([self.dim.value.data], len(shape), "slice")
        start, end, step = self.start.value.data, self.end.value.data, self.step.value.data
        if step < 1:
            raise VerifyException(f"step must be positive, got {step}")
        out = list(shape)
        if shape[dim] == DYNAMIC:  # Python's bounds, known at run time: any result size
            out[dim] = DYNAMIC
        elif not 0 <= start <= end <= shape[dim]:
            raise VerifyException(f"need 0 <= start <= end <= {shape[dim]}, got start={start} end={end}")
        else:
            out[dim] = (end - start + step - 1) // step
        expect_shape(shape_of(self.result.type), out, "result")
        expect_same_elem(self.input.type, self.result.type, "slice")


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Concatenation along ``dim`` (the UNet skip connection).

        %c = tsr.concat %a, %b {dim = 1 : i64}
               : (tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x48x8x8xf32>
    """

    name = "tsr.concat"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def verify_(self) -> None:
        check_values_layouts(list(self.inputs) + [self.result], "concat")
        if not self.inputs:
            raise VerifyException("concat needs at least one operand")
        first = shape_of(self.inputs[0].type)
        if not first:
            raise VerifyException("cannot concatenate rank-0 tensors")
        (dim,) = normalize_dims([self.dim.value.data], len(first), "concat")
        total = 0
        for i, v in enumerate(self.inputs):
            s = shape_of(v.type)
            if len(s) != len(first) or any(not same_dim(a, b) for k, (a, b) in enumerate(zip(s, first)) if k != dim):
                raise VerifyException(f"operand #{i} of shape {show(s)} does not match {show(first)} outside dim {dim}")
            expect_same_elem(v.type, self.result.type, f"operand #{i}")
            total = dim_of(lambda t, n: t + n, total, s[dim])
        out = list(first)
        out[dim] = total
        expect_shape(shape_of(self.result.type), out, "result")


@irdl_op_definition
class DimOp(IRDLOperation):
    """The size of a tensor along ``dim`` (MLIR's ``tensor.dim``): how a graph of
    symbolic sizes reads one (``aten.sym_size``).

        %h = tsr.dim %x {dim = 2 : i64} : (tensor<?x8x?x?xf32>) -> i64
    """

    name = "tsr.dim"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr)
    result = result_def(i64)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, dim: int):
        super().__init__(operands=[x], result_types=[i64], properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        rank = len(shape_of(self.input.type))
        if not 0 <= self.dim.value.data < rank:
            raise VerifyException(f"dim {self.dim.value.data} is out of range for a tensor of rank {rank}")


SHAPE_OPS = (PadOp, PermuteOp, ReshapeOp, ExpandOp, SliceOp, ConcatOp, DimOp)
