"""``addmm-as-conv``: a linear layer of many rows (``tsr.addmm``, or ``tsr.matmul``
without a bias) becomes a 1x1 convolution on the
target's own conv kernel, its rows the conv's pixels, where that kernel computes
the conv (the target's ``own_conv_kernel`` model). The views around the conv
move no data: the rows are a channels-last ``1 x K x H x W`` image (``H * W = M``,
the target's ``own_conv_rows``), the output one of ``N`` channels, the weight ``w`` itself.

    %y = tsr.addmm %b, %x, %wt : (tensor<384xf32, #tsr.layout<[0]>>, tensor<3136x96xf32, #tsr.layout<[0, 1]>>,
                                  tensor<96x384xf32, #tsr.layout<[1, 0]>>) -> tensor<3136x384xf32, #tsr.layout<[0, 1]>>
    // becomes
    %x4 = tsr.reshape %x : (...) -> tensor<1x7x448x96xf32, #tsr.layout<nchw>>
    %xc = tsr.permute %x4 {dims = array<i64: 0, 3, 1, 2>} : (...) -> tensor<1x96x7x448xf32, #tsr.layout<nhwc>>
    %w2 = tsr.permute %wt {dims = array<i64: 1, 0>} : (...) -> tensor<384x96xf32, #tsr.layout<[0, 1]>>
    %w4 = tsr.reshape %w2 : (...) -> tensor<384x96x1x1xf32, #tsr.layout<nchw>>
    %yc = tsr.conv %xc, %w4, %b {...} : (...) -> tensor<1x384x7x448xf32, #tsr.layout<nhwc>>
    %y4 = tsr.permute %yc {dims = array<i64: 0, 2, 3, 1>} : (...) -> tensor<1x7x448x384xf32, #tsr.layout<nchw>>
    %y = tsr.reshape %y4 : (...) -> tensor<3136x384xf32, #tsr.layout<[0, 1]>>

Why: on x86 tessera's kernel runs a 1x1 conv at the FMA peak, while torch's
sgemm (MKL) takes an AVX2 path on AMD CPUs: a ConvNeXt linear of 3136x96x384
ran 0.93 ms against MKL's 2.17 (``BENCHMARKS.md``, session 17). Rows fewer than
:data:`MIN_ROWS` (:data:`MIN_ROWS_FROZEN` with ``freezing``: a decoded token,
a classifier's head at batch 1) stay the library's GEMM.

Only an f32 product of a static weight (its rows may be dynamic) whose rows are row-major, whose weight is a
linear layer's (``w.t()``: stored ``[N, K]``), or a graph argument stored ``[K, N]`` (GPT-2's
``Conv1D``; with ``freezing`` the permute to ``[N, K]`` is a copy made once with the packing, without
it the weight is a ``dhwio`` view that the kernel packs itself), and whose bias, if any, is one full row.

The image has the rows the target's kernel computes best (``own_conv_rows``;
x86: ``conv/rows.py``, which streams each row's inputs once for every
output channel block); at dynamic rows, one row of ``M`` pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.ir import BlockArgument, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from tessera.dialects import tsr
from tessera.dialects.dim_orders import outputs_last
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.op_classes import reads_only_arguments
from tessera.dialects.tsr.shapes import DYNAMIC, i64_array, is_static

from .target_models import KernelQuery
from .target_pass import TargetPass, own_kernel_conv

MIN_ROWS = 64
"""The fewest rows (``M``) that make a product a conv when its weight is packed on
every call (no ``freezing``): at 64 rows of ``[M, 768] x [768, 3072]`` the kernel
with its packing ran 1.09x MKL's GEMM, at 48 rows 0.89x."""
MIN_ROWS_FROZEN = 1
"""With ``freezing`` (the weight packed once): from 8 rows the kernel ran that product
2.3-2.9x faster than MKL's packed GEMM. At 1 row (a GEMV) MKL's was faster with the weight
in cache (0.105 against 0.142 ms, AVX2); in a network the weight comes from memory (the
layers between two calls evict it), where the kernel streams it as fast or faster (cold,
1280 -> 1000: 0.194 against MKL's 0.235 ms) and its launch costs less than the library's
call. End to end, freezing, 1 thread, alternating processes (Xeon, AVX-512, session 32),
8 rows -> 1: MobileNetV3-small 2.091, 2.113, 2.138 -> 1.966, 2.010, 2.038 ms (its two
classifier GEMVs); ShuffleNetV2-x0.5 1.694, 1.703 -> 1.643, 1.614; MobileNetV2 and
EfficientNet-B0 within their noise (5.34-5.63 and 10.24-10.88 ms either way)."""

_NCHW, _NHWC, _DHWIO = (0, 1, 2, 3), (0, 2, 3, 1), outputs_last(4)
_CONV_PROPS = {"stride": i64_array([1, 1]), "padding": i64_array([0, 0]), "dilation": i64_array([1, 1]),
               "groups": IntegerAttr(1, i64)}


def _typed(shape: list[int], perm: tuple[int, ...]) -> TensorType:
    return TensorType(f32, shape, tsr.LayoutAttr(perm))


def _bias(op: tsr.AddmmOp | tsr.MatmulOp) -> SSAValue | None:
    return op.bias if isinstance(op, tsr.AddmmOp) else None


def _weight_layout_taken(rhs: SSAValue) -> bool:
    """A linear layer's weight ``w.t()`` (stored ``[N, K]``: read in place), or a ``[K, N]``
    weight computed from the graph's arguments alone (GPT-2's ``Conv1D``: ``addmm(b, x, w)``,
    ``w`` an argument or, in a bf16 model, its widening to f32): with
    ``freezing`` transposed once in the step that prepares weights, without it the conv's
    weight as views of it, output channels innermost, which the target's kernel takes only
    where it reads such a weight in place (x86: where it packs its weight itself)."""
    layout = layout_of(rhs.type)
    return layout == (1, 0) or (layout == (0, 1) and (isinstance(rhs, BlockArgument) or reads_only_arguments(rhs)))


def _takes(op: tsr.AddmmOp | tsr.MatmulOp, min_rows: int) -> bool:
    bias = _bias(op)
    types = [op.lhs.type, op.rhs.type, op.result.type, *([bias.type] if bias is not None else [])]
    if not all(isinstance(t, TensorType) and t.get_element_type() == f32 for t in types):
        return False
    if not (is_static(op.rhs.type.get_shape()) and (bias is None or is_static(bias.type.get_shape()))):
        return False
    (m, k), n = op.lhs.type.get_shape(), op.result.type.get_shape()[1]
    rows = m == DYNAMIC or m >= min_rows  # dynamic rows: the sequence or batch of a model served at many sizes
    return (rows and k > 0 and n > 0 and (bias is None or tuple(bias.type.get_shape()) == (n,))
            and layout_of(op.lhs.type) == (0, 1) and layout_of(op.result.type) == (0, 1)
            and _weight_layout_taken(op.rhs))


@dataclass(frozen=True)
class _AddmmAsConv(RewritePattern):
    query: KernelQuery

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        min_rows = MIN_ROWS_FROZEN if self.query.freezing else MIN_ROWS
        if not isinstance(op, (tsr.AddmmOp, tsr.MatmulOp)) or not _takes(op, min_rows):
            return
        (m, k), n = op.lhs.type.get_shape(), op.result.type.get_shape()[1]
        new = []

        def add(o) -> SSAValue:
            new.append(o)
            return o.results[0]

        h, w = (1, m) if m == DYNAMIC else self.query.own_conv_rows(m, k, n)
        sizes = [add(tsr.DimOp(op.lhs, 0))] if m == DYNAMIC else []
        x4 = add(tsr.ReshapeOp.create(operands=[op.lhs, *sizes], result_types=[_typed([1, h, w, k], _NCHW)]))
        xc = add(_permute(x4, (0, 3, 1, 2), _typed([1, k, h, w], _NHWC)))
        if layout_of(op.rhs.type) == (1, 0) or self.query.freezing:  # w.t() read in place, or [K, N] copied once
            w2 = add(_permute(op.rhs, (1, 0), _typed([n, k], (0, 1))))
            w4 = add(tsr.ReshapeOp.create(operands=[w2], result_types=[_typed([n, k, 1, 1], _NCHW)]))
        else:  # [K, N] on every call: views of it, output channels innermost (``dhwio``)
            w2 = add(_permute(op.rhs, (1, 0), _typed([n, k], (1, 0))))
            w4 = add(tsr.ReshapeOp.create(operands=[w2], result_types=[_typed([n, k, 1, 1], _DHWIO)]))
        conv = own_kernel_conv(self.query, xc, w4, _bias(op), None, _typed([1, n, h, w], _NHWC), dict(_CONV_PROPS))
        if conv is None:
            for o in reversed(new):
                o.drop_all_references()
            return
        y4 = _permute(conv.result, (0, 2, 3, 1), _typed([1, h, w, n], _NCHW))
        y = tsr.ReshapeOp.create(operands=[y4.results[0], *sizes], result_types=[op.result.type])
        rewriter.replace(op, [*new, conv, y4, y], [y.results[0]])


def _permute(v: SSAValue, dims: tuple[int, ...], t: TensorType) -> tsr.PermuteOp:
    return tsr.PermuteOp.create(operands=[v], result_types=[t], properties={"dims": i64_array(list(dims))})


@dataclass(frozen=True)
class AddmmAsConv(TargetPass):
    """``addmm-as-conv{target=x86 features="+avx512f" freezing=true}``"""

    name = "addmm-as-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_AddmmAsConv(self.query), apply_recursively=False).rewrite_module(op)
