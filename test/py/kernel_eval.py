"""A reference evaluator of kernel IR (docs/kernel-ir.md) for the lowering tests,
and a checker of the contract's structural rules.

Kernels run SIMT-style: the body of the top-level ``scf.parallel`` is
evaluated once for all grid points, every SSA value being a torch tensor over
the grid (or a 0-d one when uniform), in the dtype of its MLIR type, so
``bf16`` arithmetic rounds as ``bf16`` arithmetic does. Memrefs are flat
storages addressed with the strides of their memref type (never the torch
tensor's own): a wrong stride reads the wrong element. Every load and store
is bounds-checked, and each output element must be written exactly once.
A ``memref.alloca`` is private to each grid point (one copy per point), and
1-D vectors (transpose tiles, reduction accumulators) carry a trailing dim of their length.

    outs = run_kernel(fn, [x, b])               # fn: a kernel func.func
    outs = run_program(program, [x, w, b])      # a KernelProgramIR's @forward
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    TensorType,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation

from tessera.compiler.interpreter import find_function
from tessera.compiler.interpreter.impls import IMPLS
from tessera.dialects import tsr
from tessera.dialects.tsr.dtypes import ui8
from tessera.dialects.tsr.layout import strides_for
from tessera.compiler.placements import in_layout

_SCALAR_OPS = {
    *(f"arith.{n}" for n in (
        "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "addf", "subf", "mulf", "divf", "maximumf",
        "minimumf", "negf", "cmpf", "cmpi", "select", "extf", "truncf", "extsi", "extui", "trunci", "sitofp",
        "uitofp", "fptosi", "index_cast", "andi", "ori", "xori")),
    *(f"math.{n}" for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "absf", "powf", "fma", "floor", "ceil",
                            "trunc", "roundeven")),
}
_INT = {1: torch.bool, 8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
_FLOAT = {Float16Type: torch.float16, BFloat16Type: torch.bfloat16, Float32Type: torch.float32, Float64Type: torch.float64}


def torch_dtype(t: Attribute) -> torch.dtype:
    if isinstance(t, IndexType):
        return torch.int64
    if isinstance(t, IntegerType):
        return _INT[t.width.data]
    return _FLOAT[type(t)]


def memref_strides(t: MemRefType) -> tuple[int, ...]:
    shape = t.get_shape()
    if isinstance(t.layout, StridedLayoutAttr):
        assert t.layout.offset.data == 0, "kernel memrefs have offset 0"
        return tuple(s.data for s in t.layout.strides.data)
    return strides_for(shape, tuple(range(len(shape))))


class _Buffer:
    def __init__(self, t: MemRefType, tensor: torch.Tensor, is_output: bool):
        self.shape, self.strides = t.get_shape(), memref_strides(t)
        assert tensor.dtype == torch_dtype(t.element_type), f"{tensor.dtype} for {t}"
        got = [s for s, n in zip(tensor.stride(), tensor.shape) if n > 1]
        want = [s for s, n in zip(self.strides, self.shape) if n > 1]
        assert got == want, f"tensor strides {tensor.stride()} do not match {t}"
        size = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides))
        self.tensor = tensor
        self.flat = tensor.as_strided((size,), (1,))
        self.writes = torch.zeros(size, dtype=torch.int32) if is_output else None

    def collapsed(self, t: MemRefType) -> _Buffer:
        """The same storage (and write counts) addressed as ``t`` (``memref.collapse_shape``)."""
        view = object.__new__(_Buffer)
        view.__dict__.update(self.__dict__)
        view.shape, view.strides = t.get_shape(), memref_strides(t)
        return view

    def offsets(self, idx: list[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        off = torch.zeros((), dtype=torch.int64)
        bad = torch.zeros((), dtype=torch.bool)
        for i, n, s in zip(idx, self.shape, self.strides):
            bad = bad | (i < 0) | (i >= n)
            off = off + i * s
        if bool((bad & mask).any()):
            raise AssertionError(f"index out of bounds of {list(self.shape)}: {[i.tolist() for i in idx]}")
        return torch.where(mask, off, 0)


class _Scratch:
    """A ``memref.alloca``: one private copy per grid point once the grid runs."""

    def __init__(self, t: MemRefType):
        self.type = t

    def for_points(self, points: int) -> _Buffer:
        t = self.type
        per = torch.empty(points, *t.get_shape(), dtype=torch_dtype(t.element_type))
        buf = _Buffer(t, per[0], is_output=False)
        buf.flat = per.reshape(-1)
        buf.size = per[0].numel()
        buf.points = torch.arange(points)
        return buf


def _offsets(buf: _Buffer, idx: list[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    off = buf.offsets(idx, mask)
    points = getattr(buf, "points", None)
    return off if points is None else off + points * buf.size


class KernelEval:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn

    def run(self, args: list[torch.Tensor]) -> None:
        outputs = set(self.fn.attributes["tsr.outputs"].get_values())
        env: dict = {}
        for i, (a, t) in enumerate(zip(self.fn.body.block.args, args, strict=True)):
            env[a] = _Buffer(a.type, t, i in outputs)
        self.block(self.fn.body.block, env, torch.ones((), dtype=torch.bool))
        for i, a in enumerate(self.fn.body.block.args):
            if i in outputs:
                buf = env[a]
                view = buf.writes.as_strided(buf.shape, buf.strides)
                assert bool((view == 1).all()), f"output #{i}: elements written {view.unique().tolist()} times, not once"

    def block(self, block: Block, env: dict, mask: torch.Tensor) -> list:
        for op in block.ops:
            if isinstance(op, (scf.YieldOp, func.ReturnOp, scf.ReduceOp)):
                return [env[v] for v in op.operands]
            res = self.op(op, env, mask)
            for r, v in zip(op.results, res, strict=True):
                env[r] = v
        return []

    def op(self, op: Operation, env: dict, mask: torch.Tensor) -> list:
        x = [env[v] for v in op.operands]
        rt = [None if isinstance(r.type, (VectorType, MemRefType)) else torch_dtype(r.type) for r in op.results]
        if op.name in _SCALAR_OPS:
            return [self.scalar(op, x, rt[0])]
        if isinstance(op, arith.ConstantOp):
            v = op.value
            val = v.value.data if isinstance(v, FloatAttr) else v.value.data
            return [torch.tensor(val, dtype=rt[0]) if rt[0] != torch.bool else torch.tensor(bool(val))]
        if isinstance(op, scf.ParallelOp):
            ubs = [int(env[u]) for u in op.upperBound]
            assert all(int(env[lb]) == 0 for lb in op.lowerBound) and all(int(env[s]) == 1 for s in op.step)
            ivs = torch.meshgrid(*[torch.arange(n) for n in ubs], indexing="ij")
            inner = {k: v.for_points(ivs[0].numel()) if isinstance(v, _Scratch) else v for k, v in env.items()}
            for a, iv in zip(op.body.block.args, ivs):
                inner[a] = iv.reshape(-1)
            self.block(op.body.block, inner, mask)
            return []
        if isinstance(op, scf.ForOp):
            lb, step = int(x[0]), int(x[2])
            ub = x[1]  # one bound, or one per grid point (an edge tile's): each point masked past its own
            accs = x[3:]
            for i in range(lb, int(ub.max()) if ub.numel() else 0, step):
                inner = dict(env)
                inner[op.body.block.args[0]] = torch.tensor(i)
                for a, v in zip(op.body.block.args[1:], accs):
                    inner[a] = v
                if ub.dim() == 0:
                    accs = self.block(op.body.block, inner, mask)
                    continue
                running = i < ub
                nxt = self.block(op.body.block, inner, mask & running)
                accs = [torch.where(running.reshape(running.shape + (1,) * (a.dim() - running.dim())), n, a)
                        for n, a in zip(nxt, accs)]
            return accs
        if isinstance(op, scf.IfOp):
            c = x[0]
            then = self.block(op.true_region.block, dict(env), mask & c)
            other = self.block(op.false_region.block, dict(env), mask & ~c) if op.false_region.blocks else []
            return [torch.where(c, a, b) for a, b in zip(then, other)]
        if isinstance(op, memref.AllocaOp):
            return [_Scratch(op.memref.type)]
        if isinstance(op, memref.CollapseShapeOp):
            return [x[0].collapsed(op.result.type)]
        if isinstance(op, memref.LoadOp):
            buf = x[0]
            return [buf.flat[_offsets(buf, x[1:], mask)]]
        if isinstance(op, memref.StoreOp):
            self.store(x[1], _offsets(x[1], x[2:], mask), x[0], mask)
            return []
        if isinstance(op, vector.TransferReadOp):
            (dim,) = [e.position for e in op.permutation_map.data.results]
            buf, idx = x[0], x[1:-1]
            lanes = [buf.flat[_offsets(buf, self.lane(idx, dim, k), mask)] for k in range(op.result.type.get_shape()[0])]
            return [torch.stack(torch.broadcast_tensors(*lanes), dim=-1)]
        if isinstance(op, vector.ShuffleOp):
            a, b = torch.broadcast_tensors(x[0][..., None], x[1][..., None])
            return [torch.cat([a[..., 0], b[..., 0]], dim=-1)[..., list(op.mask.get_values())]]
        if isinstance(op, vector.BroadcastOp):
            n = op.vector.type.get_shape()[0]
            return [x[0][..., None].expand(*x[0].shape, n)]
        if isinstance(op, vector.ExtractOp):
            (position,) = op.static_position.get_values()
            return [x[0][..., position]]
        if isinstance(op, vector.InsertOp):
            (position,) = op.static_position.get_values()
            lane, vec = torch.broadcast_tensors(x[0][..., None], x[1])
            out = vec.clone()
            out[..., position] = lane[..., position]
            return [out]
        if isinstance(op, (vector.StoreOp, vector.TransferWriteOp)):
            val, buf, idx = x[0], x[1], x[2:]
            dim = (len(idx) - 1 if isinstance(op, vector.StoreOp)
                   else next(e.position for e in op.permutation_map.data.results))
            for k in range(val.shape[-1]):
                self.store(buf, _offsets(buf, self.lane(idx, dim, k), mask), val[..., k], mask)
            return []
        return [self.scalar(op, x, rt[0])]

    @staticmethod
    def lane(idx: list[torch.Tensor], dim: int, k: int) -> list[torch.Tensor]:
        return [i + k if d == dim else i for d, i in enumerate(idx)]

    @staticmethod
    def store(buf: _Buffer, off: torch.Tensor, val: torch.Tensor, mask: torch.Tensor) -> None:
        m = mask.expand(off.shape) if off.dim() else mask
        off, val = torch.broadcast_tensors(off, val)
        m = torch.broadcast_to(m, off.shape)
        buf.flat[off[m]] = val[m].to(buf.flat.dtype)
        if buf.writes is not None:
            buf.writes.index_add_(0, off[m].reshape(-1), torch.ones_like(off[m], dtype=torch.int32).reshape(-1))

    def scalar(self, op: Operation, x: list[torch.Tensor], rt: torch.dtype) -> torch.Tensor:
        name = op.name.split(".")[1]
        a = x[0] if x else None
        simple = {
            "addf": lambda: a + x[1], "subf": lambda: a - x[1], "mulf": lambda: a * x[1], "divf": lambda: a / x[1],
            "negf": lambda: -a, "maximumf": lambda: torch.maximum(a, x[1]), "minimumf": lambda: torch.minimum(a, x[1]),
            "addi": lambda: a + x[1], "subi": lambda: a - x[1], "muli": lambda: a * x[1],
            "divsi": lambda: torch.div(a, x[1], rounding_mode="trunc"), "remsi": lambda: torch.fmod(a, x[1]),
            "andi": lambda: a & x[1], "ori": lambda: a | x[1], "xori": lambda: a ^ x[1],
            "select": lambda: torch.where(a, x[1], x[2]),
            "exp": lambda: torch.exp(a), "log": lambda: torch.log(a), "sqrt": lambda: torch.sqrt(a),
            "rsqrt": lambda: torch.rsqrt(a), "tanh": lambda: torch.tanh(a), "erf": lambda: torch.erf(a),
            "absf": lambda: torch.abs(a), "powf": lambda: torch.pow(a, x[1]), "fma": lambda: a * x[1] + x[2],
            "floor": lambda: torch.floor(a), "ceil": lambda: torch.ceil(a), "trunc": lambda: torch.trunc(a),
            "roundeven": lambda: torch.round(a),
        }
        if name in simple:
            r = simple[name]()
            return r if rt is None else r.to(rt)  # a vector's dtype is its elements'; rt is None
        if name in ("divui", "remui"):
            assert bool((a >= 0).all()) and bool((x[1] > 0).all()), "unsigned index math on negative values"
            return (torch.div(a, x[1], rounding_mode="floor") if name == "divui" else torch.remainder(a, x[1])).to(rt)
        if name == "cmpf":
            pred = op.predicate.value.data
            table = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 13: "ne"}  # oeq ogt oge olt ole une
            res = getattr(torch, table[pred])(a, x[1])
            return res
        if name == "cmpi":
            pred = op.predicate.value.data
            b = x[1]
            if pred >= 6:  # unsigned
                a, b = _unsigned(a), _unsigned(b)
            table = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge", 6: "lt", 7: "le", 8: "gt", 9: "ge"}
            return getattr(torch, table[pred])(a, b)
        if name in ("extf", "truncf", "extsi", "fptosi", "sitofp", "index_cast"):
            return a.to(rt)
        if name in ("extui", "uitofp"):
            return _unsigned(a).to(rt)
        if name == "trunci":
            return (a & 1).bool() if rt == torch.bool else a.to(rt)
        raise NotImplementedError(f"kernel_eval: {op.name}")


def _unsigned(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.int8:
        return t.to(torch.uint8).to(torch.int16)
    if t.dtype == torch.bool:
        return t.to(torch.int16)
    return t


def allocate_for(t: MemRefType) -> torch.Tensor:
    """An output buffer for ``t``, filled with garbage (NaN or a marker)."""
    dtype = torch_dtype(t.element_type)
    out = torch.empty_strided(t.get_shape(), memref_strides(t), dtype=dtype)
    out.fill_(float("nan") if dtype.is_floating_point else 7 if dtype != torch.bool else True)
    return out


def run_kernel(fn: func.FuncOp, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run kernel ``fn`` on ``inputs`` (tensors in the memref layouts); its outputs."""
    types = [a.type for a in fn.body.block.args]
    outs = [allocate_for(t) for t in types[len(inputs):]]
    KernelEval(fn).run([*inputs, *outs])
    return outs


def _storage(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int8) if t.dtype == torch.uint8 else t


def run_program(program, inputs: list[torch.Tensor], function: str = "forward") -> list[torch.Tensor]:
    """Run a KernelProgramIR's host function: launches through :func:`run_kernel`,
    every other op through the reference interpreter's semantics."""
    kernels = {op.sym_name.data: op for op in program.kernels.body.block.ops}
    fn = find_function(program.host, function)
    env = {a: in_layout(x, a.type) for a, x in zip(fn.body.block.args, inputs, strict=True)}
    ctx = SimpleNamespace(device=torch.device("cpu"))
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.operands]
        if isinstance(op, tsr.LaunchOp):
            kfn = kernels[op.callee.root_reference.data]
            ins = [_storage(env[v]) for v in op.inputs]
            outs = run_kernel(kfn, ins)
            for r, o in zip(op.outs, outs, strict=True):
                env[r] = o.view(torch.uint8) if r.type.get_element_type() == ui8 else o
            continue
        res = IMPLS[type(op)](op, ctx, *(env[v] for v in op.operands))
        for r, v in zip(op.results, res if isinstance(res, tuple) else (res,), strict=True):
            env[r] = in_layout(v, r.type) if isinstance(r.type, TensorType) else v
    raise AssertionError("no func.return")


# -- the contract's structural rules --------------------------------------------------------
_INSIDE = {
    "scf.for", "scf.if", "scf.yield", "scf.reduce", "memref.load", "memref.store", "memref.alloca",
    "vector.transfer_read", "vector.transfer_write", "vector.shuffle", "vector.store", "vector.broadcast", "vector.extract", "vector.insert",
    *(f"arith.{n}" for n in (
        "constant", "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "addf", "subf", "mulf", "divf",
        "maximumf", "minimumf", "negf", "cmpf", "cmpi", "select", "extf", "truncf", "extsi", "extui", "trunci",
        "sitofp", "uitofp", "fptosi", "index_cast", "andi", "ori", "xori")),
    *(f"math.{n}" for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "absf", "powf", "fma", "floor", "ceil",
                            "trunc", "roundeven")),
}
_HALF = (Float16Type, BFloat16Type)


def check_contract(fn: func.FuncOp, half_in_f32: bool = True) -> None:
    """Assert the structural rules of docs/kernel-ir.md on kernel ``fn``."""
    assert isinstance(fn.attributes.get("tsr.kernel"), UnitAttr), "missing tsr.kernel"
    outs = fn.attributes.get("tsr.outputs")
    assert isinstance(outs, DenseArrayBase) and outs.get_values(), "missing tsr.outputs"
    assert not fn.function_type.outputs.data, "kernels return nothing"
    for t in fn.function_type.inputs.data:
        assert isinstance(t, MemRefType) and all(n >= 0 for n in t.get_shape()), f"argument {t}"
        if isinstance(t.layout, StridedLayoutAttr):
            assert t.layout.offset.data == 0 and all(s.data is not None for s in t.layout.strides.data)
    ops = list(fn.body.block.ops)
    assert isinstance(ops[-1], func.ReturnOp) and isinstance(ops[-2], scf.ParallelOp), "constants, one scf.parallel, return"
    assert all(isinstance(o, (arith.ConstantOp, memref.AllocaOp, memref.CollapseShapeOp)) for o in ops[:-2]), \
        "only constants, scratch and collapsed arguments before the grid"
    par = ops[-2]
    assert not par.initVals
    for v in (*par.lowerBound, *par.step):
        assert isinstance(v.owner, arith.ConstantOp) and v.owner.value.value.data == (1 if v in par.step else 0)
    assert all(isinstance(v.owner, arith.ConstantOp) for v in par.upperBound), "static grid"
    for op in par.body.walk():
        if op is par:
            continue
        assert op.name in _INSIDE, f"'{op.name}' is not allowed in a kernel"
        if half_in_f32 and op.name not in ("memref.load", "memref.store", "arith.extf", "arith.truncf",
                                             "arith.constant", "arith.sitofp", "arith.uitofp",
                                             "vector.transfer_read", "vector.shuffle", "vector.store"):
            for v in (*op.operands, *op.results):
                assert not isinstance(v.type, _HALF), f"'{op.name}' computes in {v.type} under the f32 policy"
