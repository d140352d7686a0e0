"""Polyphase convolution: a convolution of a nearest-upsampled tensor, computed
on the tensor before upsampling (``passes/fold_upsample_into_conv.py``).

Upsampling by ``s`` repeats each input element ``s`` times, so the output
positions ``y = s*i + a`` of one *phase* ``a`` all see the same input rows
through the same summed taps: a 3-tap kernel after a 2x upsample is a 2-tap
kernel per phase, and all phases together are one convolution with ``s``
times the output channels on the small input (2.25x fewer FLOPs in 2-D,
no upsampled tensor), followed by an interleave of the phases:

    %u = tsr.upsample %x {mode = "nearest"} : (tensor<1x64x32x32xf32>) -> tensor<1x64x64x64xf32>
    %y = tsr.conv %u, %w, %b {padding = array<i64: 1, 1>, ...} -> tensor<1x64x64x64xf32>
    // becomes
    %xp = tsr.pad %x, %zero {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 1, 1>}
    %wp = tsr.polyphase_weight %w {scales = array<i64: 2, 2>, padding = array<i64: 1, 1>}
          : (tensor<64x64x3x3xf32>) -> tensor<256x64x2x2xf32>
    %c  = tsr.conv %xp, %wp, %bp {padding = array<i64: 0, 0>, ...} -> tensor<1x256x33x33xf32>
    %y  = tsr.polyphase_interleave %c {scales = array<i64: 2, 2>, shifts = array<i64: 0, 1, 0, 1>}
          : (tensor<1x256x33x33xf32>) -> tensor<1x64x64x64xf32>

:class:`PolyphaseDim` (``dialects/polyphase.py``, no IR) holds the arithmetic of
one spatial dim, shared by the pass, the verifiers, the interpreter, the host
program and the kernel lowering.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tessera.dialects.polyphase import PolyphaseDim

from .shapes import (
    DYNAMIC,
    I64Array,
    check_values_layouts,
    expect_rank,
    expect_same_elem,
    expect_shape,
    ints,
    is_static,
    numel,
    same_dim,
    shape_of,
    show,
    show_dim,
)


@irdl_op_definition
class PolyphaseWeightOp(IRDLOperation):
    """The weight of the polyphase conv: for each phase (row-major over the
    spatial dims, then output channel) the sum of the taps that read the same
    input element. ``[C_out, C_in, k...] -> [P*C_out, C_in, taps...]``.

        %wp = tsr.polyphase_weight %w {scales = array<i64: 1, 2, 2>, padding = array<i64: 1, 1, 1>}
              : (tensor<64x64x3x3x3xf32>) -> tensor<256x64x3x2x2xf32>
    """

    name = "tsr.polyphase_weight"
    input = operand_def(TensorType)
    scales = prop_def(I64Array)
    padding = prop_def(I64Array)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def dims(self) -> list[PolyphaseDim]:
        kernel = shape_of(self.input.type)[2:]
        return [PolyphaseDim(s, k, p) for s, k, p in zip(ints(self.scales), kernel, ints(self.padding))]

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], self.name)
        expect_rank(self.input.type, (3, 4, 5), "weight")
        w = shape_of(self.input.type)
        if not is_static(w):
            raise VerifyException(f"the weight's shape must be static, got {self.input.type}")
        for what, arr in (("scales", self.scales), ("padding", self.padding)):
            if len(ints(arr)) != len(w) - 2:
                raise VerifyException(f"{what} needs {len(w) - 2} entries")
        for s, k, p in zip(ints(self.scales), w[2:], ints(self.padding)):
            if not PolyphaseDim.supports(s, k, p):
                raise VerifyException(f"scale {s}, kernel {k}, padding {p}: needs scale >= 1 and 2*padding == kernel-1")
        dims = self.dims()
        expect_same_elem(self.input.type, self.result.type, self.name)
        phases = numel([d.scale for d in dims])
        expect_shape(shape_of(self.result.type), [phases * w[0], w[1], *(d.taps for d in dims)], "result")


@irdl_op_definition
class PolyphaseInterleaveOp(IRDLOperation):
    """Interleaves the phases of a polyphase conv's output into the upsampled
    grid: ``out[n, c, s*i + a] = in[n, phase(a)*C + c, i + shift(a)]`` per
    spatial dim, with ``shifts`` listing each dim's ``scale`` shifts in turn.

        %y = tsr.polyphase_interleave %c {scales = array<i64: 1, 2, 2>, shifts = array<i64: 0, 0, 1, 0, 1>}
             : (tensor<1x256x4x33x33xf32>) -> tensor<1x64x4x64x64xf32>
    """

    name = "tsr.polyphase_interleave"
    input = operand_def(TensorType)
    scales = prop_def(I64Array)
    shifts = prop_def(I64Array)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def dim_shifts(self) -> list[tuple[int, ...]]:
        """Each spatial dim's shifts, one per phase."""
        flat, out = ints(self.shifts), []
        for s in ints(self.scales):
            out.append(tuple(flat[:s]))
            flat = flat[s:]
        return out

    def verify_(self) -> None:
        check_values_layouts([self.input, self.result], self.name)
        expect_rank(self.input.type, (3, 4, 5), "input")
        x, y = shape_of(self.input.type), shape_of(self.result.type)
        scales = ints(self.scales)
        if len(scales) != len(x) - 2 or any(s < 1 for s in scales):
            raise VerifyException(f"scales needs {len(x) - 2} entries >= 1")
        if len(ints(self.shifts)) != sum(scales):
            raise VerifyException(f"shifts needs {sum(scales)} entries (one per phase of each dim)")
        phases = numel(scales)
        if x[1] == DYNAMIC:
            raise VerifyException(f"input channels must be static, got {self.input.type}")
        if x[1] % phases:
            raise VerifyException(f"{x[1]} input channels do not split into {phases} phases")
        expect_same_elem(self.input.type, self.result.type, self.name)
        if len(y) != len(x) or not same_dim(y[0], x[0]) or y[1] != x[1] // phases:
            raise VerifyException(f"result {show(y)} must be batch {show_dim(x[0])}, {x[1] // phases} channels")
        for d, (s, shifts) in enumerate(zip(scales, self.dim_shifts())):
            n, q = y[2 + d], x[2 + d]
            if DYNAMIC in (n, q):
                continue  # checked when the sizes are known
            if n % s:
                raise VerifyException(f"result dim {2 + d} ({n}) is not a multiple of its scale {s}")
            if min(shifts) < 0 or n // s - 1 + max(shifts) >= q:
                raise VerifyException(f"shifts {list(shifts)} read outside input dim {2 + d} of size {q}")


POLYPHASE_OPS = (PolyphaseWeightOp, PolyphaseInterleaveOp)
