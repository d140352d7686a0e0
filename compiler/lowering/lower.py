"""``lower_to_kernels``: the ``fused`` stage to the ``kernel`` stage (docs/kernel-ir.md).

Each ``tsr.fused`` becomes a kernel function and, in the host graph, a
``tsr.launch`` of it; library ops stay as they are:

    %y = tsr.fused (%x) : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>> {...}
    // host:
    %y = tsr.launch @fused_0(%x) : (tensor<1x8x4x4xf32, #tsr.layout<nhwc>>) -> tensor<1x8x4x4xf32, #tsr.layout<nhwc>>
    // kernels:
    func.func @fused_0(%arg0: memref<1x8x4x4xf32, strided<[128, 1, 32, 8]>>,
                       %arg1: memref<1x8x4x4xf32, strided<[128, 1, 32, 8]>>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>} {
      scf.parallel (%h, %w) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {   // n is 1: not a loop
        scf.for %c = %c0 to %c8 step %c1 { ... memref.store ... }      // contiguous dim innermost
        scf.reduce
      }
      func.return
    }

Kernel arguments are the fused op's operands, then its results. Grid: a
pointwise kernel is parallel over the dims of its (first) output's memory
order except the innermost, which is an ``scf.for``; a reduction kernel is
parallel over every kept dim, with the reduced dims as loops inside. Dims of
size 1 are not looped over. With ``transpose_tile`` (x86), an input read
across its contiguous dim goes through in-register transpose tiles
(``transpose_tiles.py``) and the grid walks tiles of the two innermost dims.
Kernels that come out identical share one function (three relayouts of
same-shaped weights launch one kernel).
"""

from __future__ import annotations

import bisect
import io
import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.printer import Printer

from tessera.dialects import tsr
from tessera.dialects.tsr.layout import layout_of
from tessera.dialects.tsr.ops_nn import REDUCTION_OPS
from tessera.dialects.tsr.shapes import DYNAMIC, elem_of, is_static, shape_of

from ..ir_io import op_location
from .dim_exprs import RESULT_DIMS, encode_result_dims, result_dims
from .index_maps import concat_offsets
from .kernel_builder import KernelBuilder, LoweringError, loop_dims, memref_type, storage_type
from .lane_values import LaneValues, is_native
from .reductions import ReductionLoops
from .row_dims import holds_row, row_dims, tile_dims
from .scalar_ops import Numerics, ScalarLowering
from .transpose_tiles import TransposeTiles, read_at_output_index, tileable_element
from .values import ValueEmitter


@dataclass
class KernelProgramIR:
    """The ``kernel`` stage: the host graph (``@forward`` with ``tsr.launch``es
    and library ops) and the module of kernel functions."""

    host: ModuleOp
    kernels: ModuleOp

    def text(self) -> str:
        return f"// ----- host\n{_print(self.host)}\n// ----- kernels\n{_print(self.kernels)}\n"


def _print(op: Operation) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def lower_fused(op: tsr.FusedOp, name: str, numerics: Numerics = Numerics(), tile: int | None = None,
                lanes: int | None = None, concat_loops: bool = True, row_lanes: int | None = None,
                merge_rows: bool = False) -> func.FuncOp:
    """The kernel function computing ``op``'s results from its operands.
    ``tile``: the width of the transpose tiles for inputs read across their
    contiguous dim (``transpose_tiles``; None: strided reads). ``lanes``: the
    most kept indices a reduction grid point computes side by side
    (``_lane_split``; None: one). ``concat_loops``: split a pointwise kernel's
    innermost loop at the operands of a concat along it (``concat_segments``;
    not where each thread computes one point: a GPU's grid takes that loop).
    ``row_lanes``: a pointwise kernel's static innermost loop at least this long
    runs as vectors of this many lanes (``_vector_row``; None: the plain loop).
    ``merge_rows``: a pointwise kernel's innermost dims that every tensor stores
    alike are one loop (``row_dims``: ``h * w`` of NCHW tensors)."""
    n_in, n_out = len(op.inputs), len(op.outs)
    arg_types = [memref_type(v.type) for v in op.inputs] + [memref_type(r.type) for r in op.outs]
    names = [f"in{i}" for i in range(n_in)] + [f"out{j}" for j in range(n_out)]
    elems = [elem_of(v.type) for v in (*op.inputs, *op.outs)]
    dtypes_ = [e if e != storage_type(e) else None for e in elems]
    kb = KernelBuilder(name, arg_types, list(range(n_in, n_in + n_out)), names, dtypes_)
    scalars = ScalarLowering(kb, numerics)
    body = op.body.block
    values = ValueEmitter(kb, scalars, body, kb.args[:n_in])
    outs = list(zip(op.yield_op.values, kb.args[n_in:]))
    reductions = [o for o in body.ops if isinstance(o, REDUCTION_OPS)]
    if reductions:
        _reduction_kernel(kb, scalars, values, reductions, outs, lanes)
    else:
        reads = list(zip(body.args, kb.args[:n_in]))
        groups = (row_dims(op), tile_dims(op, tile) if tile else None) if merge_rows else (None, None)
        _pointwise_kernel(kb, scalars, values, outs, reads, tile, concat_loops, row_lanes, *groups)
    return kb.finish()


def _transpose_aware(dims: list[int], out_type, in_types) -> list[int]:
    """The output's loop order, with the contiguous dim of the largest input
    that is laid out differently (a relayout read) moved second innermost: the
    two innermost loops then walk both tensors' contiguous dims, and one
    ``dims[-2] x dims[-1]`` tile of the input stays in L1 while it is read
    across and written along.

        out ncdhw, in ndhwc:  loops (c, d, h | w)  ->  (d, h, c | w)
    """
    shape = shape_of(out_type)
    big = [d for d in range(len(shape)) if shape[d] != 1]
    same_dims = [t for t in in_types
                 if len(shape_of(t)) == len(shape) and [d for d in range(len(shape)) if shape_of(t)[d] != 1] == big]
    if len(dims) < 2 or not same_dims:
        return dims
    widest = max(same_dims, key=lambda t: math.prod(abs(n) for n in shape_of(t)))  # a dynamic size: the largest
    d_in = loop_dims(widest)[-1]
    if d_in == dims[-1]:
        return dims
    return [d for d in dims[:-1] if d != d_in] + [d_in, dims[-1]]


def _transposed_inputs(dims: list[int], shape, reads, tile: int | None, sizes=None) -> list[tuple[SSAValue, SSAValue]]:
    """The (body argument, input memref) pairs worth a transpose tile: same
    shape as the output, contiguous along ``dims[-2]`` (moved there by
    ``_transpose_aware``), read only at the output's index, with both tiled
    dims at least a tile wide (or dynamic: the edge tiles check their bounds).
    ``sizes``: the tiled dims' lengths where dims are merged (``tile_dims``)."""
    sizes = shape if sizes is None else sizes
    if tile is None or len(dims) < 2 or any(DYNAMIC != sizes[d] < tile for d in dims[-2:]):
        return []
    return [(arg, ref) for arg, ref in reads
            if shape_of(arg.type) == tuple(shape) and loop_dims(arg.type)[-1] == dims[-2]
            and tileable_element(elem_of(arg.type)) and read_at_output_index(arg, shape)]


def _tile_grid_order(dims: list[int], out_layout, in_layout) -> list[int]:
    """The grid dims of a tiled kernel, outermost first (chosen by timing both
    orders of the ResNet block's relayouts, warm and from DRAM; BENCHMARKS.md,
    ``bench/relayout.py``). Of the two tiled dims, one keeps
    its place among the others in both layouts (``w`` between NCHW and NHWC):
    its tiles are innermost, so consecutive tiles walk both tensors in memory
    order. The other (``c``) goes just outside it when the output is contiguous
    along it (the two halves of each output line are written while it is in L1),
    and outside every other dim when the input is (the output's rows are then
    written in long sequential runs; the input's lines come back from L2):

        out nhwc, in nchw:  (h | w, c)  ->  (h, c/8, w/8)
        out nchw, in nhwc:  (h | c, w)  ->  (c/8, h, w/8)
    """
    b, a = dims[-2], dims[-1]
    rest = dims[:-2]

    def without(layout, d):
        return [x for x in layout if x != d]
    moving = [m for m in (a, b) if without(out_layout, m) == without(in_layout, m)]
    if len(moving) != 1:
        return [*rest, b, a]
    m = moving[0]
    s = b if m == a else a
    if m == a:
        return [*rest, m, s]
    lead = [d for d in rest if list(out_layout).index(d) < list(out_layout).index(m)
            and list(in_layout).index(d) < list(in_layout).index(m)]
    return [*lead, m, *[d for d in rest if d not in lead], s]


def _pointwise_kernel(kb: KernelBuilder, scalars: ScalarLowering, values: ValueEmitter, outs,
                      reads=(), tile: int | None = None, concat_loops: bool = True, row_lanes: int | None = None,
                      group: tuple[int, ...] | None = None, plane: tuple[int, ...] | None = None) -> None:
    """``reads``: (body argument, input memref) pairs. ``group``: the dims the
    innermost loop walks as one row (``row_dims``), where they are the innermost
    loops. ``plane``: the dims that are one dim of the transpose tiles (``tile_dims``)."""
    first = outs[0][0].type
    shape = shape_of(first)
    for v, _ in outs:
        if shape_of(v.type) != shape:
            raise LoweringError(
                f"the results of a pointwise tsr.fused must have one shape, got {list(shape)} and {list(shape_of(v.type))}"
            )
    out_ref = outs[0][1]
    dims = _transpose_aware(loop_dims(first), first, [arg.type for arg, _ in reads])
    inner = dims[-1] if dims else None
    grid_dims = dims[:-1]

    def index(at: dict[int, SSAValue]) -> tuple[SSAValue, ...]:
        return tuple(at.get(d, kb.index(0)) for d in range(len(shape)))

    def point(at: dict[int, SSAValue]) -> None:
        idx = index(at)
        for v, ref in outs:
            scalars.store(values.at(v, idx), ref, idx, elem_of(v.type))

    def lanes(at: dict[int, SSAValue], dim: int, n: int, given: dict[SSAValue, SSAValue]) -> None:
        """The outputs at ``n`` neighbours along ``dim`` from ``at``, computed as
        vectors (``given``: vectors of body arguments already read there)."""
        idx = index(at)
        lane_values = LaneValues(values, n)
        for arg, vec in given.items():
            lane_values.given(arg, idx, dim, vec)
        for v, ref in outs:  # native floats: computed in their storage type
            kb.write_along(lane_values.at(v, idx, dim), ref, idx, dim)

    transposed = _transposed_inputs(dims, shape, reads, tile)
    if plane:
        merged = [d for d in dims if d not in plane[:-1]]
        sizes = [*shape]
        sizes[plane[-1]] = DYNAMIC if DYNAMIC in [shape[d] for d in plane] else math.prod(shape[d] for d in plane)
        through = _transposed_inputs(merged, shape, reads, tile, sizes)
        if through and plane[-1] in merged[-2:]:
            _collapse(kb, [ref for _, ref in reads] + [ref for _, ref in outs], plane, len(shape))
            dims, transposed = merged, through
    if transposed:
        native = all(is_native(scalars.num, elem_of(t.type)) for t in [*(arg for arg, _ in transposed), *(v for v, _ in outs)])
        _tiled_pointwise(kb, out_ref, dims, transposed, tile, layout_of(first), index, point, lanes if native else None)
        return
    length = shape[inner] if inner is not None else 1
    if group and dims[-len(group):] == list(group):
        _collapse(kb, [ref for _, ref in reads] + [ref for _, ref in outs], group, len(shape))
        grid_dims = [d for d in grid_dims if d not in group]
        sizes = [shape[d] for d in group]
        length = DYNAMIC if DYNAMIC in sizes else math.prod(sizes)
    segments = concat_segments(values.body, inner, shape) if inner is not None and concat_loops else []
    rows = row_lanes if (inner is not None and row_lanes and DYNAMIC != length >= row_lanes and not segments
                         and LaneValues(values, row_lanes).whole_body()) else 0

    def grid_body(ivs) -> None:
        at = dict(zip(grid_dims, ivs))
        if inner is None:
            point(at)
            return
        if rows:
            _vector_row(kb, at, inner, length, rows, point, lanes)
            return
        if not segments:
            kb.for_loop(kb.dim(out_ref, inner), [], lambda iv, _accs: point({**at, inner: iv}) or [])
            return
        for start, end, picks in segments:  # one loop per run of concat operands: no choosing per element

            def segment(j, _accs, start=start, picks=picks) -> list:
                iv = kb.add(j, start)
                values.picks = {op: (iv, k) for op, k in picks.items()}
                point({**at, inner: iv})
                values.picks = {}
                return []

            kb.for_loop(end - start, [], segment)

    kb.parallel([kb.dim(out_ref, d) for d in grid_dims], grid_body)


def _collapse(kb: KernelBuilder, refs: list[SSAValue], group: tuple[int, ...], rank: int) -> None:
    """Each of ``refs`` that holds the dims ``group`` of the output (of ``rank``
    dims, right-aligned to it) is read and written through one merged dim."""
    for ref in refs:
        own = tuple(d - rank + ref.type.get_num_dims() for d in group)
        if own[0] >= 0 and holds_row(ref.type.get_shape(), own):
            kb.collapse(ref, own)


def _vector_row(kb: KernelBuilder, at: dict[int, SSAValue], inner: int, n: int, width: int, point, lanes) -> None:
    """A pointwise kernel's innermost loop (along ``inner``, ``n`` long) as
    ``width``-lane vectors (``LaneValues``), the last ``n % width`` elements one
    by one. LLVM vectorizes the plain loop of a small body, but at short static
    rows it unrolls the loop first and leaves a larger body (sigmoid) scalar:

        // sigmoid(x * y), 8x144x8x8 nchw: 260 us as 8 scalar chains, 48-66 us as
        scf.for %j = %c0 to %c1 step %c1 {
          %x = vector.transfer_read %in0[%n, %c, %h, %w0], %pad ... : vector<8xf32>
          ...
          vector.transfer_write %s, %out0[%n, %c, %h, %w0] ...
        }
    """
    full, rest = divmod(n, width)
    kb.for_loop(full, [], lambda j, _accs: lanes({**at, inner: kb.mul(j, width)}, inner, width, {}) or [])
    if rest:
        kb.for_loop(rest, [], lambda r, _accs: point({**at, inner: kb.add(r, full * width)}) or [])


def concat_segments(body, dim: int, shape) -> list[tuple[int, int, dict[tsr.ConcatOp, int]]]:
    """The runs ``[start, end)`` of a pointwise kernel's innermost loop (along
    ``dim`` of the output ``shape``) in which each concat of ``body`` along that
    dim, as wide as the loop, reads one operand: (start, end, concat -> operand).
    Empty where there is no such concat (or a dynamic size). DenseNet's
    BatchNorm-ReLU over the concat of the block's features: per element a chain
    of compares, per segment a plain loop the vectorizer takes.

        concat of 64 + 32 + 32 channels, the loop over c:  [(0, 64, {cat: 0}), (64, 96, {cat: 1}), (96, 128, {cat: 2})]
    """
    n = shape[dim]
    cats = [op for op in body.ops if isinstance(op, tsr.ConcatOp) and len(shape_of(op.result.type)) == len(shape)
            and op.dim.value.data % len(shape) == dim and shape_of(op.result.type)[dim] == n != DYNAMIC
            and DYNAMIC not in [shape_of(x.type)[dim] for x in op.inputs]]
    if not cats:
        return []
    starts = {op: concat_offsets([shape_of(x.type)[dim] for x in op.inputs]) for op in cats}
    bounds = sorted({0, n, *(b for op in cats for b in starts[op])})
    return [(a, b, {op: bisect.bisect_right(starts[op], a) - 1 for op in cats}) for a, b in zip(bounds, bounds[1:])]


def _tiled_pointwise(kb: KernelBuilder, out_ref: SSAValue, dims: list[int], transposed: list[tuple[SSAValue, SSAValue]],
                     width: int, out_layout, index, point, lanes=None) -> None:
    """``_pointwise_kernel`` over ``width x width`` tiles of the two innermost
    loop dims, the transposed inputs (body argument, memref) read through
    ``TransposeTiles``. A dynamic tiled dim is covered by ``ceil(n / width)`` tiles.
    With ``lanes`` (``_pointwise_kernel``'s, where every tiled value is a float
    computed in its own type) a full tile is ``width`` rows along ``a``, each
    computed as vectors from rows of the tiles:

        scf.for %bi = %c0 to %c8 step %c1 {
          %t = vector.transfer_read %tile[%bi, %c0], %pad ... : memref<8x8xf32>, vector<8xf32>
          %x = vector.transfer_read %in1[%n, %c, %h, %w0], %pad ...    // an input laid out as the output
          %s = arith.addf %t, %x : vector<8xf32>
          vector.transfer_write %s, %out0[%n, %c, %h, %w0] ...          // a vector store along a
        }

    Without, each element of a tile is computed alone, the loop along ``a`` outside
    for LLVM to vectorize (it does where it fully unrolls the inner loop: small bodies).
    A tile at the edge loops over its ``min(width, n - start)`` indices inside the
    tensor, with strided reads (dynamic 8x240x4x4 sigmoid: 201 -> 182 us against
    the 8 x 8 loops with a bounds check per element)."""
    b, a = dims[-2], dims[-1]
    order = _tile_grid_order(dims, out_layout, layout_of(transposed[0][0].type))
    shape = out_ref.type.get_shape()
    sizes = {d: n if (n := kb.known(kb.dim(out_ref, d))) is not None else kb.dim(out_ref, d) for d in order}
    nb, na = sizes[b], sizes[a]
    tiles = TransposeTiles(kb, width, len(shape), b, a)

    def each(at: dict[int, SSAValue], b0: SSAValue, a0: SSAValue, inside) -> None:
        def over_a(ai, _accs) -> list:
            def over_b(bi, _accs) -> list:
                inside({**at, b: kb.add(b0, bi), a: kb.add(a0, ai)}, bi, ai)
                return []
            kb.for_loop(width, [], over_b)
            return []
        kb.for_loop(width, [], over_a)

    def full(at, b0, a0) -> list:
        scratch = [(arg, ref, tiles.fill(ref, at, b0, a0)) for arg, ref in transposed]
        if lanes is not None:
            def row(bi, _accs) -> list:
                given = {arg: kb.read_along(tile, [bi, kb.index(0)], 1, VectorType(storage_type(elem_of(arg.type)), [width]))
                         for arg, _, tile in scratch}
                lanes({**at, b: kb.add(b0, bi), a: a0}, a, width, given)
                return []
            kb.for_loop(width, [], row)
            return []

        def inside(pt, bi, ai) -> None:
            idx = index(pt)
            for _, ref, tile in scratch:  # the input's load at this index reads the tile
                kb.remember(("load", ref, *idx), kb.load(tile, [bi, ai]))
            point(pt)
        each(at, b0, a0, inside)
        return []

    def edge(at, b0, a0) -> list:  # the part of the tile inside the tensor, read strided
        def over_b(bi, _accs) -> list:
            def over_a(ai, _accs) -> list:
                point({**at, b: kb.add(b0, bi), a: kb.add(a0, ai)})
                return []
            kb.for_loop(kb.min(kb.sub(kb.size(na), a0), width), [], over_a)
            return []
        kb.for_loop(kb.min(kb.sub(kb.size(nb), b0), width), [], over_b)
        return []

    def grid_body(ivs) -> None:
        at = dict(zip(order, ivs))
        b0, a0 = kb.mul(at.pop(b), width), kb.mul(at.pop(a), width)
        if isinstance(nb, int) and isinstance(na, int) and nb % width == 0 and na % width == 0:
            full(at, b0, a0)
            return
        fits = kb.both(kb.cmp("sle", b0, kb.sub(kb.size(nb), width)), kb.cmp("sle", a0, kb.sub(kb.size(na), width)))
        kb.if_else(fits, [], lambda: full(at, b0, a0), lambda: edge(at, b0, a0))

    kb.parallel([kb.tiles(sizes[d], width) if d in (a, b) else sizes[d] for d in order], grid_body)


def _lane_split(loops: ReductionLoops, kept_dims: list[int], most: int | None) -> tuple[int, int] | None:
    """(dim, lanes) where each grid point of a reduction should compute a vector
    of ``lanes`` neighbours along the input's contiguous dim (a channels-last
    tensor pooled over space, ``mean(x, [2, 3])`` of NHWC; one point per index
    would read its elements ``C`` apart): that dim is kept, its size static and a
    multiple of ``lanes``, and :meth:`ReductionLoops.vector_lanes` holds.

        mean over h, w of 1x32x112x112 nhwc, lanes 16:  grid (c / 16), vector<16xf32> sums
    """
    if not most or not loops.loop_dims:
        return None
    inner = loop_dims(loops.input.type)[-1]
    n = loops.shape[inner]
    if inner not in kept_dims or n == DYNAMIC or not loops.vector_lanes(inner):
        return None
    lanes = most
    while lanes > 1 and n % lanes:
        lanes //= 2
    return (inner, lanes) if lanes > 1 else None


def _reduction_kernel(kb: KernelBuilder, scalars: ScalarLowering, values: ValueEmitter, reductions, outs,
                      most_lanes: int | None = None) -> None:
    for v, _ in outs:
        if not isinstance(v.owner, REDUCTION_OPS):
            raise LoweringError("a tsr.fused with reductions may only yield reduction results")
    loops = ReductionLoops(kb, scalars, values, reductions)
    red, rank = loops.dims, len(loops.shape)
    kept_dims = [d for d in range(rank) if d not in red]
    first = outs[0][0]
    keepdim = bool(first.owner.keepdim.value.data)
    grid_dims = loop_dims(first.type)
    split = _lane_split(loops, kept_dims, most_lanes)

    def out_to_in(d: int) -> int:
        return d if keepdim else kept_dims[d]

    def store(kept: dict[int, SSAValue], results: dict[Operation, SSAValue]) -> None:
        zero = kb.index(0)
        for v, ref in outs:
            r = v.owner
            if r.keepdim.value.data:
                idx = tuple(zero if d in red else kept.get(d, zero) for d in range(rank))
            else:
                idx = tuple(kept.get(d, zero) for d in kept_dims)
            scalars.store(results[r], ref, idx, elem_of(v.type))

    def grid_body(ivs) -> None:
        kept = {out_to_in(d): iv for d, iv in zip(grid_dims, ivs)}
        if split is None:
            store(kept, loops.emit(kept))
            return
        d, n = split
        kept[d] = kb.mul(kept[d], n)
        for i, results in enumerate(loops.emit_vector(kept, d, n)):
            store({**kept, d: kb.add(kept[d], i)}, results)

    extents = [kb.dim(outs[0][1], d) for d in grid_dims]
    if split is not None:
        extents[[out_to_in(d) for d in grid_dims].index(split[0])] = loops.shape[split[0]] // split[1]
    kb.parallel(extents, grid_body)


def lower_to_kernels(module: ModuleOp, *, half_in_f32: bool = True, transpose_tile: int | None = None,
                     reduce_lanes: int | None = None, concat_loops: bool = True,
                     row_lanes: int | None = None, merge_rows: bool = False) -> KernelProgramIR:
    """Lower every ``tsr.fused`` of ``module`` (the ``fused`` stage, not
    modified) to a kernel and a ``tsr.launch``. ``half_in_f32``: compute
    ``f16``/``bf16`` in ``f32`` (x86, CUDA) or natively (Metal).
    ``transpose_tile``: width of the in-register transpose tiles (x86: 8).
    ``reduce_lanes``: the kept indices a reduction's grid point computes side
    by side along a kept contiguous dim (x86: 16, a vector of f32).
    ``concat_loops``: a loop per concat operand along the innermost loop (CPUs).
    ``row_lanes``: pointwise rows along a static innermost dim as vectors of
    this many lanes (x86: 8). ``merge_rows``: innermost dims every tensor of a
    pointwise kernel stores alike as one loop (``row_dims``; x86)."""
    numerics = Numerics(half_in_f32)
    host = module.clone()
    kernels = ModuleOp([])
    by_text: dict[str, str] = {}
    fused = [op for op in host.walk() if isinstance(op, tsr.FusedOp)]
    for op in fused:
        name = f"fused_{len(by_text)}"
        try:
            kernel = lower_fused(op, name, numerics, transpose_tile, reduce_lanes, concat_loops, row_lanes, merge_rows)
            dynamic = not all(is_static(shape_of(r.type)) for r in op.outs)
            dims = encode_result_dims(result_dims(op)) if dynamic else None
        except LoweringError as e:
            raise LoweringError(e.message, e.location or op_location(op)) from None
        text = _print(kernel).replace(f"@{name}(", "@(", 1)
        if text in by_text:
            name = by_text[text]
        else:
            by_text[text] = name
            kernels.body.block.add_op(kernel)
        launch = tsr.LaunchOp(name, list(op.inputs), [r.type for r in op.outs])
        if dims is not None:
            launch.attributes[RESULT_DIMS] = dims
        block = op.parent_block()
        block.insert_op_before(launch, op)
        for old, new in zip(op.outs, launch.outs):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        block.detach_op(op)
        op.erase()
    return KernelProgramIR(host, kernels)


