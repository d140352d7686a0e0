"""``fuse-kernels``: groups pointwise, data-movement and reduction ops into
``tsr.fused`` regions, each of which becomes one kernel.

    %v = tsr.var %x {dims = array<i64: 2>, keepdim = true, ...}  : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    %m = tsr.mean %x {dims = array<i64: 2>, keepdim = true}       : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    %a = tsr.add %v, %eps ...    %r = tsr.rsqrt %a ...    %s = tsr.sub %x, %m ...    %y = tsr.mul %s, %r ...
    // becomes two kernels: the reductions, then everything that reads them
    %v2, %m2 = tsr.fused (%x) : (...) -> (...) { ... tsr.var ... tsr.mean ... tsr.yield ... }
    %y2 = tsr.fused (%x, %v2, %m2) : (...) -> ... { ... tsr.rsqrt ... tsr.mul ... tsr.yield ... }

What fuses: elementwise ops, ``tsr.convert``, ``tsr.relayout``, ``tsr.pad``,
``tsr.expand``/``reshape``/``permute``/``slice``/``concat``, nearest
``tsr.upsample``, scalar ``tsr.constant``s and the reductions (sum, mean,
amax, amin, var). Everything else (``tsr.conv``, the matrix products,
``tsr.aten_call``, bilinear upsampling, tensor constants) stays on the host
and bounds the groups.

The grouping rule (ops are visited consumers first, i.e. in reverse program order):

1. A reduction ends a group: it starts a *reduction group* whose outputs are
   its reductions, and its consumers start new groups. Reductions over the
   same dims of values of one type (shape, layout, element; a dynamic dim of
   one origin, ``dim_origin``) share one group unless one depends on the
   other, through other groups too (``_reaches``): one pass over the data.
   A reduction is checked against the nearest such group only (the one made
   last): one walk of uses per reduction. GroupNorm's var and mean of ``x``; its
   backward's ``sum(dy * x)`` and ``sum(dy)``; BatchNorm's likewise. So
   GroupNorm is one reduction kernel plus one pointwise kernel, as Inductor
   makes it.
2. An op whose users all lie in one group joins that group: a pointwise
   group computes it at the indices its consumers need (elementwise chains,
   broadcasts, pads, reshapes fold into the kernel that consumes them); a
   reduction group computes it inside its reduction loop (a prologue). Except
   a value computed by or from a transcendental op (exp, sigmoid, rsqrt, ...)
   that the group broadcasts over at least :data:`BROADCAST_RECOMPUTE` times
   its elements (a group of :data:`MATERIALIZE_MIN_SPACE` or more; a dynamic
   dim counts as :data:`DYNAMIC_EXTENT`): it would be evaluated once per
   element of the group, so it is materialized. A squeeze-excite gate,
   ``sigmoid`` of ``1xCx1x1`` scaling ``1xCxHxW``: C sigmoids, not C*H*W.
   GroupNorm's per-channel scale ``rsqrt(var + eps) * gamma`` and shift
   ``beta - mean * scale``: two kernels of C elements, and the one over the
   image computes ``x * scale + shift`` (then its SiLU).
3. An op with users in several groups, or with a user outside every group
   (a library op, ``func.return``), is materialized: it is the output of a
   new pointwise group, which the other groups read. Recomputation instead
   of materialization is allowed only for ops that do no arithmetic: scalar
   constants (copied into every group that uses them) and data-movement ops
   (convert, relayout, pad, expand, reshape, permute, slice, concat, nearest
   upsample), which are copied into each consuming group and, if something
   outside the groups also reads them, materialized once more. And an op read
   by one pointwise group and returned by the function (nothing else outside
   reads it), whose result has the type of that group's output, is computed in
   the group as a further output (``_another_output``): a training forward's
   saved pre-activation and the activation after it are one kernel.
4. A group that is nothing but one reshape, permute or relayout whose result
   is its input's memory read another way (a view: ``permute`` of a weight
   feeding ``tsr.addmm``) is left on the host as that op, not made a copy kernel.
5. A pointwise group whose one output is such a view of a value it computes
   outputs that value; the view is left on the host (``_peel_view``). The
   kernel writes the same memory over the computed value's dims, which its
   inputs share, so one in another layout is read through transpose tiles.

At dynamic sizes a reshape fuses when its dynamic dims are one input dim each
(``dim_sources.reshape_anchors``); the ``tsr.dim`` sizes it reads are
recomputed inside its group, and every ``tsr.dim`` first reads the earliest
tensor of its size (``dim_origin``), so that no size keeps a value on the host.

Hence a pointwise group has one iteration space (its first output's shape,
which its further outputs share), and a reduction group's outputs are reductions of one
shape over the same dims. Groups never form a cycle: when an op joins a
group, every op already grouped comes after it in program order, so no path
leads from the group back to the op's operands; a reduction joins its
siblings' group only when no path leads from it into the group, groups
taken as single nodes. The
function is then re-emitted in a topological order of host ops and groups
(each group where its last op was, when dependencies allow).
Ops without users are left alone (``dce`` removes them); running the pass
twice changes nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tessera.dialects import tsr
from tessera.dialects.diagnostics import TesseraError
from tessera.dialects.tsr.dim_sources import dim_origin, reshape_anchors, sized_at_run_time
from tessera.dialects.tsr.layout import layout_of, strides_for
from tessera.dialects.tsr.ops_elementwise import ELEMENTWISE_OPS
from tessera.dialects.tsr.ops_nn import REDUCTION_OPS
from tessera.dialects.tsr.shapes import DYNAMIC, ints, is_static, numel, shape_of

from .layout_agnostic import same_memory


class FusionError(TesseraError):
    """The grouping of a function could not be emitted (an internal inconsistency)."""


_MOVEMENT_OPS = (tsr.ConvertOp, tsr.RelayoutOp, tsr.ExpandOp, tsr.ReshapeOp, tsr.PermuteOp, tsr.SliceOp, tsr.ConcatOp,
                 tsr.PolyphaseInterleaveOp)


def _is_scalar_constant(v: SSAValue) -> bool:
    return isinstance(v.owner, tsr.ConstantOp) and not isinstance(v.type, TensorType)


def op_kind(op: Operation) -> str | None:
    """How ``op`` fuses: ``constant``, ``reduction``, ``movement`` (no
    arithmetic: may be recomputed), ``compute``, or None (stays on the host:
    also an op whose dynamic result dims a kernel cannot size, ``dim_sources``)."""
    if not sized_at_run_time(op):
        return None
    if isinstance(op, tsr.ConstantOp):
        return None if isinstance(op.result.type, TensorType) else "constant"
    if isinstance(op, REDUCTION_OPS):
        return "reduction"
    if isinstance(op, ELEMENTWISE_OPS):
        scalars_ok = all(isinstance(v.type, TensorType) or _is_scalar_constant(v) for v in op.operands)
        return "compute" if scalars_ok else None
    if isinstance(op, tsr.ExpandOp) and op.sizes:
        return None  # sized at run time by values of the host: a view there (a reshape: when its
        # dynamic dims are not one input dim each, sized_at_run_time said so)
    if isinstance(op, _MOVEMENT_OPS):
        return "movement"
    if isinstance(op, tsr.PadOp):
        return "movement" if _is_scalar_constant(op.value) else None
    if isinstance(op, tsr.UpsampleOp):
        return "movement" if op.mode.data == "nearest" else None
    return None


TRANSCENDENTAL_OPS = (tsr.ExpOp, tsr.LogOp, tsr.SigmoidOp, tsr.SiluOp, tsr.TanhOp, tsr.ErfOp, tsr.GeluOp, tsr.PowOp,
                      tsr.RsqrtOp, tsr.SqrtOp)
"""Elementwise ops that cost a polynomial, a call or a square root per element, not one instruction."""
BROADCAST_RECOMPUTE = 8
"""A value broadcast over this many times its elements is materialized when a
transcendental op computes it (rule 2)..."""
MATERIALIZE_MIN_SPACE = 4096
"""... by a group of at least this many elements: below, a launch of its own costs
more than the recomputation saves (a transcendental: tens of cycles an element; a
launch: a few microseconds)."""
DYNAMIC_EXTENT = 8
"""What a dynamic dim counts as in a group's iteration space for rule 2 (an image side
or a sequence: at least this, as a rule), so that a dynamic GroupNorm gets the static one's kernels."""


@dataclass(eq=False)
class _Group:
    kind: str  # "pointwise" | "reduction"
    ops: list[Operation] = field(default_factory=list)
    space: int | None = None
    """Elements of the group's iteration space (a pointwise group's output, a reduction's
    input), a dynamic dim counted as :data:`DYNAMIC_EXTENT`; None: not a tensor."""
    out: SSAValue | None = None
    """A pointwise group's first output (the value whose index space the kernel walks)."""


def _numel(v: SSAValue) -> int | None:
    """Elements of a tensor value of static shape, else None."""
    shape = shape_of(v.type) if isinstance(v.type, TensorType) else None
    return numel(shape) if shape is not None and is_static(shape) else None


def _space(v: SSAValue) -> int | None:
    """Elements of a tensor value, a dynamic dim counted as :data:`DYNAMIC_EXTENT`."""
    if not isinstance(v.type, TensorType):
        return None
    return numel([DYNAMIC_EXTENT if d == DYNAMIC else d for d in shape_of(v.type)])


def _broadcast_recompute(op: Operation, g: _Group) -> bool:
    """Whether ``g`` would evaluate ``op``, a transcendental op or a value computed
    from one, at least :data:`BROADCAST_RECOMPUTE` times per element of its result
    (GroupNorm's per-channel scale ``rsqrt(var + eps) * gamma``, read at every pixel)."""
    if g.space is None or op_kind(op) != "compute":
        return False
    n = _numel(op.results[0])
    return (n is not None and g.space >= max(BROADCAST_RECOMPUTE * n, MATERIALIZE_MIN_SPACE)
            and _from_transcendental(op))


def _from_transcendental(op: Operation) -> bool:
    """Whether ``op`` or a fusible op it reads through other fusible ops is transcendental."""
    seen: set[Operation] = set()
    todo = [op]
    while todo:
        x = todo.pop()
        if isinstance(x, TRANSCENDENTAL_OPS):
            return True
        seen.add(x)
        todo.extend(v.owner for v in x.operands if isinstance(v.owner, Operation) and v.owner not in seen
                    and op_kind(v.owner) in ("compute", "movement"))
    return False


def _sibling_key(op: Operation) -> tuple:
    """What reductions that may share a group have in common: the reduced dims, the
    input's type, and the origin of each of its dynamic dims (two dims of one
    origin have one size)."""
    t = op.input.type
    origins = tuple(dim_origin(op.input, d) for d, n in enumerate(shape_of(t)) if n == DYNAMIC)
    return op.reduced_dims(), t, origins


def _reaches(op: Operation, g: _Group, member: dict[Operation, list[_Group]]) -> bool:
    """Whether a path of uses leads from ``op`` into ``g`` once groups are single
    nodes: reaching any op of a group continues from every op of it (a group is
    one kernel, so its outputs wait for all its inputs). Conservative where a
    movement op copied into several groups joins them."""
    seen: set[Operation] = {op}
    todo = [op]

    def visit(x: Operation) -> None:
        if x not in seen:
            seen.add(x)
            todo.append(x)

    while todo:
        for u in _users(todo.pop()):
            if u in seen:
                continue
            visit(u)
            for h in member.get(u, ()):
                if h is g:
                    return True
                for x in h.ops:
                    visit(x)
    return False


def _users(op: Operation) -> list[Operation]:
    seen: dict[Operation, None] = {}
    for r in op.results:
        for use in r.uses:
            seen.setdefault(use.operation, None)
    return list(seen)


def _view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> list[int] | None:
    """The strides of ``new_shape`` viewing a ``shape``/``strides`` tensor's
    memory, or None when a reshape there needs a copy (ATen's computeStride)."""
    if not shape:
        return [1] * len(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    return new_strides if view_d == -1 else None


def is_view(op: Operation) -> bool:
    """A reshape/permute/relayout whose result, in its layout, is its input's
    memory read another way (so the runtime can alias it instead of copying)."""
    if not isinstance(op, (tsr.ReshapeOp, tsr.PermuteOp, tsr.RelayoutOp)):
        return False
    src, dst = op.input.type, op.result.type
    in_shape, out_shape = shape_of(src), shape_of(dst)
    if not is_static(in_shape) or not is_static(out_shape):
        return _order_view(op)
    if isinstance(op, tsr.RelayoutOp):
        return same_memory(tuple(in_shape), layout_of(src), layout_of(dst))
    in_strides = strides_for(in_shape, layout_of(src))
    if isinstance(op, tsr.ReshapeOp):
        got = _view_strides(in_shape, in_strides, out_shape)
    else:
        got = [in_strides[d] for d in ints(op.dims)]
    if got is None:
        return False
    want = strides_for(out_shape, layout_of(dst))
    return all(g == w or n == 1 for g, w, n in zip(got, want, out_shape))


def _order_view(op: Operation) -> bool:
    """:func:`is_view` at dynamic sizes, where strides are known at run time only: a
    permute or relayout whose result's dims of size other than 1 come in its input's
    memory order, each dynamic dim counted as other than 1 (a transposed GEMM operand,
    ``tensor<?x144xf32, [0, 1]>`` permuted to ``tensor<144x?xf32, [1, 0]>``), or a
    reshape that only drops or adds dims of size 1 (:func:`_unit_reshape_source`),
    under the same condition. Any other reshape of dynamic sizes is a copy (whether
    it views its input depends on the sizes)."""
    in_shape, out_shape = shape_of(op.input.type), shape_of(op.result.type)
    if isinstance(op, tsr.ReshapeOp):
        source = _unit_reshape_source(op)
        if source is None:
            return False
    else:  # the input dim of each result dim
        source = dict(enumerate(ints(op.dims) if isinstance(op, tsr.PermuteOp) else range(len(out_shape))))
    read = [source[d] for d in layout_of(op.result.type) if out_shape[d] != 1]
    return read == [d for d in layout_of(op.input.type) if in_shape[d] != 1]


def _unit_reshape_source(op: tsr.ReshapeOp) -> dict[int, int] | None:
    """The input dim of each result dim other than 1, for a reshape of dynamic sizes
    whose dims other than 1 are its input's, in order and of the same sizes (each
    dynamic one a ``tsr.dim`` of the input's, :func:`reshape_anchors`); else None.
    Dynamo specializes sizes 0 and 1, so a dynamic dim is never 1. A squeeze-excite's
    backward reshapes ``tensor<?x48x1x1xf32, #tsr.layout<nhwc>>`` to ``tensor<?x48xf32>``:
    ``{0: 0, 1: 1}``."""
    anchors = reshape_anchors(op)
    if anchors is None:
        return None
    in_shape, out_shape = shape_of(op.input.type), shape_of(op.result.type)
    kept_in = [k for k, n in enumerate(in_shape) if n != 1]
    kept_out = [d for d, n in enumerate(out_shape) if n != 1]
    if len(kept_in) != len(kept_out) or any(in_shape[k] != out_shape[d] for k, d in zip(kept_in, kept_out)):
        return None
    source = dict(zip(kept_out, kept_in))
    return source if all(source[d] == k for k, d in anchors) else None


@dataclass
class _Partition:
    groups: list[_Group]
    member: dict[Operation, list[_Group]]  # the groups an op is computed in
    home: dict[Operation, _Group]  # the group whose output an op's result is
    host_views: set[Operation] = field(default_factory=set)  # rule 4: on the host, perhaps copied into groups too


def partition(block: Block) -> _Partition:
    """Assign the ops of a function body to groups (the rule of the module docstring)."""
    groups: list[_Group] = []
    member: dict[Operation, list[_Group]] = {}
    home: dict[Operation, _Group] = {}
    siblings: dict[tuple, _Group] = {}  # the latest reduction group of each key

    def new_group(kind: str, op: Operation) -> _Group:
        g = _Group(kind, space=_space(op.input if kind == "reduction" else op.results[0]),
                   out=None if kind == "reduction" else op.results[0])
        groups.append(g)
        home[op] = g
        return g

    def join(op: Operation, gs: Sequence[_Group]) -> None:
        for g in gs:
            g.ops.append(op)
        member[op] = list(gs)

    for op in reversed(list(block.ops)):
        kind = op_kind(op)
        users = _users(op)
        if kind is None or not users:
            continue
        in_groups: dict[_Group, None] = {}
        for u in users:
            for g in member.get(u, ()):
                in_groups.setdefault(g, None)
        ug = list(in_groups)
        external = any(not member.get(u) for u in users)
        if kind == "constant":
            join(op, ug)  # host users, if any, keep the original
        elif kind == "reduction":
            key = _sibling_key(op)
            g = siblings.get(key)
            if g is None or _reaches(op, g, member):  # only the nearest siblings: one walk a reduction
                g = siblings[key] = new_group("reduction", op)
            home[op] = g
            join(op, [g])
        elif not external and len(ug) == 1 and not _broadcast_recompute(op, ug[0]):
            join(op, ug)
        elif kind == "compute" and len(ug) == 1 and _another_output(op, ug[0], users, member):
            home[op] = ug[0]
            join(op, ug)
        elif kind == "movement" and ug:
            gs = ug + ([new_group("pointwise", op)] if external else [])
            join(op, gs)
        else:
            join(op, [new_group("pointwise", op)])

    # Rule 4: a group of views alone stays on the host as those ops. Producers' groups
    # first: a chain that starts at a view the host also reads (a weight transposed for
    # one GEMM, transposed back and reshaped for a conv) is one once that view is.
    host_views: set[Operation] = set()
    for g in reversed(list(groups)):
        real = [op for op in g.ops if op_kind(op) != "constant"]
        if real and all(is_view(op) for op in real) and _one_chain(real, g, home):
            groups.remove(g)
            del home[real[0]]
            host_views.update(real)  # their host users read the host ops; groups they were copied into keep a copy
            for op in g.ops:
                member[op] = [x for x in member[op] if x is not g]
    for g in groups:
        _peel_view(g, member, home, host_views)
    return _Partition(groups, member, home, host_views)


def _peel_view(g: _Group, member: dict[Operation, list[_Group]], home: dict[Operation, _Group],
               host_views: set[Operation]) -> None:
    """Rule 5: a pointwise group whose one output is a view (a permute or relayout,
    :func:`is_view`) of a value it computes outputs that value instead; the view
    stays on the host. The kernel writes the same memory, walking the computed
    value's dims, which its inputs share: an input of another layout is then read
    through transpose tiles. A 1x1 conv's backward at dynamic sizes reads BatchNorm's
    input gradient as ``reshape(permute(dx_bn))``: the reshape of dynamic sizes stays
    on the host, and the permute joined the BatchNorm kernel, which then read its
    NCHW operand a float at a time (2.3 ms at 8x96x32x32 against 0.45 tiled)."""
    view = g.out.owner if g.kind == "pointwise" and g.out is not None else None
    if not isinstance(view, (tsr.PermuteOp, tsr.RelayoutOp)) or member.get(view) != [g] or not is_view(view):
        return
    src = view.input.owner
    if not isinstance(src, Operation) or member.get(src) != [g] or src in home or op_kind(src) != "compute":
        return
    if any(home.get(op) is g for op in g.ops if op is not view):  # further outputs share the view's type
        return
    g.ops.remove(view)
    member[view] = []
    del home[view]
    home[src] = g
    g.out, g.space = src.results[0], _space(src.results[0])
    host_views.add(view)


def _another_output(op: Operation, g: _Group, users: list[Operation], member: dict[Operation, list[_Group]]) -> bool:
    """Rule 3's exception: whether ``op``, read by pointwise group ``g`` and returned by the
    function (and by nothing else outside the groups), is computed in ``g`` as a further
    output of it: its result has the type of ``g``'s output (one iteration space; each
    dynamic dim of one origin), so the kernel writes it beside that output at each index.
    A training forward returns the values its backward reads: BatchNorm's normalized
    pre-activation and the ReLU after it are then one pass over the conv's output, not
    two (the second re-reading what the first wrote)."""
    if g.kind != "pointwise" or g.out is None or _broadcast_recompute(op, g):
        return False
    if any(not member.get(u) and not isinstance(u, func.ReturnOp) for u in users):
        return False
    v, out = op.results[0], g.out
    if len(op.results) != 1 or v.type != out.type:
        return False
    dynamic = [d for d, n in enumerate(shape_of(v.type)) if n == DYNAMIC]
    return all(dim_origin(v, d) == dim_origin(out, d) for d in dynamic)


def _one_chain(ops: list[Operation], g: _Group, home: dict[Operation, _Group]) -> bool:
    """Whether a group's ops (consumers first) are one chain ending in its output: each
    op reads the next one's result, the last reads a value from outside the group, and
    no op but the output is materialized (the output of any group)."""
    if home.get(ops[0]) is not g or any(op in home for op in ops[1:]):
        return False
    return all(a.input.owner is b for a, b in zip(ops, ops[1:]))


def _emit(block: Block, part: _Partition) -> None:
    """Re-emit ``block``: host ops and one ``tsr.fused`` per group, in a topological order."""
    ops = list(block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    host = [op for op in ops if not part.member.get(op) or op in part.host_views or (
        op_kind(op) == "constant" and any(not part.member.get(u) for u in _users(op)))]
    host_set = set(host)

    # Each group's ops in program order, inputs and outputs.
    g_ops = {g: sorted(set(g.ops), key=pos.__getitem__) for g in part.groups}
    g_inputs: dict[_Group, list[SSAValue]] = {}
    g_outputs: dict[_Group, list[SSAValue]] = {}
    producer: dict[SSAValue, object] = {}  # value -> node (host op or group) on the host
    anchors: dict[Operation, list[tuple[int, int]]] = {}  # a reshape of dynamic sizes in a group -> its anchors
    for op in host:
        for r in op.results:
            producer[r] = op
    for g, gops in g_ops.items():
        inside = set(gops)
        seen: dict[SSAValue, None] = {}
        for op in gops:
            if isinstance(op, tsr.ReshapeOp) and op.sizes:  # its sizes: read inside from its input
                anchors[op] = reshape_anchors(op) or []
            for v in (op.operands if op not in anchors else [op.input]):
                if not (isinstance(v.owner, Operation) and v.owner in inside):
                    seen.setdefault(v, None)
        g_inputs[g] = list(seen)
        g_outputs[g] = [op.results[0] for op in gops if part.home.get(op) is g]
        for r in g_outputs[g]:
            producer[r] = g

    nodes: list[object] = [*host, *part.groups]
    deps: dict[object, list[SSAValue]] = {op: list(op.operands) for op in host}
    deps.update(g_inputs)
    key = {op: pos[op] for op in host}
    for g, gops in g_ops.items():
        key[g] = max(pos[o] for o in gops)
    terminator = block.last_op
    if terminator is not None and terminator in key:
        key[terminator] = len(ops)
    users_of: dict[object, list[object]] = {n: [] for n in nodes}
    indegree = {n: 0 for n in nodes}
    for n in nodes:
        preds = {producer[v] for v in deps[n] if v in producer}
        if any(isinstance(v.owner, Operation) and v not in producer for v in deps[n]):
            missing = next(v for v in deps[n] if isinstance(v.owner, Operation) and v not in producer)
            raise FusionError(f"internal: value {missing.name_hint or ''} of '{missing.owner.name}' is not materialized")
        indegree[n] = len(preds)
        for p in preds:
            users_of[p].append(n)
    index = {id(n): i for i, n in enumerate(nodes)}
    heap = [(key[n], index[id(n)], n) for n in nodes if indegree[n] == 0]
    heapq.heapify(heap)
    order: list[object] = []
    while heap:
        _, _, n = heapq.heappop(heap)
        order.append(n)
        for u in users_of[n]:
            indegree[u] -= 1
            if indegree[u] == 0:
                heapq.heappush(heap, (key[u], index[id(u)], u))
    if len(order) != len(nodes):
        raise FusionError("internal: the fusion groups form a cycle")

    for op in ops:
        block.detach_op(op)
    mapping: dict[SSAValue, SSAValue] = {}
    for n in order:
        if isinstance(n, Operation):
            if n in part.host_views:  # groups clone it from its original operands: the host gets a copy
                copy = n.clone()
                for old, new in zip(n.results, copy.results):
                    new.name_hint, mapping[old] = old.name_hint, new
                n = copy
            n.operands = [mapping.get(v, v) for v in n.operands]
            block.add_op(n)
            continue
        inputs = g_inputs[n]
        region, body = tsr.FusedOp.empty_body([v.type for v in inputs])
        vm: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args))
        for a, v in zip(body.args, inputs):
            a.name_hint = v.name_hint
        for op in g_ops[n]:
            if op in anchors:  # a reshape's sizes: its input's anchored dims, read inside the group
                dims = [tsr.DimOp(vm[op.input], k) for k, _ in anchors[op]]
                body.add_ops(dims)
                clone = tsr.ReshapeOp.create(operands=[vm[op.input], *(d.result for d in dims)],
                                             result_types=[op.result.type])
                clone.location = op.location
            else:
                clone = op.clone(value_mapper=vm)
            body.add_op(clone)
            for old, new in zip(op.results, clone.results):
                vm[old] = new
        outs = g_outputs[n]
        body.add_op(tsr.YieldOp([vm[v] for v in outs]))
        fused = tsr.FusedOp([mapping.get(v, v) for v in inputs], [v.type for v in outs], region)
        block.add_op(fused)
        for old, new in zip(outs, fused.results):
            new.name_hint = old.name_hint
            mapping[old] = new
    for op in ops:
        if op not in host_set or op in part.host_views:
            op.erase(safe_erase=False)


def _sizes_from_origins(block: Block) -> None:
    """Each ``tsr.dim`` reads the earliest tensor of that size (``dim_origin``), so
    that reading a size does not make the host hold a value fusion would keep
    inside a kernel (a size read from a reshape's result, for the next reshape):

        %z = tsr.exp %x ...;  %n = tsr.dim %z {dim = 0 : i64}   // becomes  %n = tsr.dim %x {dim = 0 : i64}
    """
    for op in list(block.ops):
        if isinstance(op, tsr.DimOp):
            v, d = dim_origin(op.input, op.dim.value.data)
            if v is not op.input:
                origin = tsr.DimOp(v, d)
                block.insert_op_before(origin, op)
                origin.result.name_hint = op.result.name_hint
                op.result.replace_all_uses_with(origin.result)
                block.erase_op(op)


def fuse_function(fn: func.FuncOp) -> None:
    block = fn.body.block
    _sizes_from_origins(block)
    part = partition(block)
    if part.groups:
        _emit(block, part)
        for op in reversed(list(block.ops)):  # sizes that only reshapes now inside groups read
            if isinstance(op, tsr.DimOp) and not op.result.uses:
                block.erase_op(op)


@dataclass(frozen=True)
class FuseKernels(ModulePass):
    name = "fuse-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if fn.body.blocks:
                fuse_function(fn)
