"""Kernel IR (docs/kernel-ir.md) printed as Metal Shading Language.

    func.func @k(%x: memref<4x8xf16>, %y: memref<4x8xf16>) attributes {tsr.kernel, tsr.outputs = array<i64: 1>}
      scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) { ... }
 ->
    kernel void k(device const half* x [[buffer(0)]], device half* y [[buffer(1)]],
                  uint tid [[thread_position_in_grid]]) {
      if (tid >= 32u) return;                     // the dispatch may round the grid up
      uint rest = tid;
      const int v0 = static_cast<int>(rest % 8u);  // innermost grid dim fastest
      rest /= 8u;
      const int v1 = static_cast<int>(rest);
      ...
    }

One grid point per thread. Every SSA value becomes a typed local (``const half v7 = ...;``),
``scf.for`` a C loop whose ``iter_args`` are mutable locals, ``scf.if`` an if/else
assigning its results, ``memref.load/store`` an access at ``sum(index_k * stride_k)``
(the memref's static strides), ``memref.alloca`` a local array. A kernel with more
than 31 buffers (Metal's buffer-table limit) takes one argument buffer instead: a
struct of device pointers at ``[[buffer(0)]]``.

A kernel with sizes known only at run time (``KernelSignature.dynamic``) takes one
more buffer after its tensors (after the argument buffer, if any): the ``long``
array of its dynamic sizes and strides in the order of ``KernelSignature.dim_slots``,
which ``memref.dim``, dynamic strides and the grid read; its index math is ``long``
(no size bounds it), the de-flattening of ``tid`` ``uint`` (the grid fits 32 bits):

    func.func @k(%x: memref<?x8xf32>, %y: memref<?x8xf32>)     // scf.parallel to (memref.dim %y, %c0), %c8
 ->
    kernel void k(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant long* tsr_dims [[buffer(2)]],   // [x.size(0), y.size(0)]
                  uint tid [[thread_position_in_grid]]) {
      const long tsr_d1 = tsr_dims[1];
      if (static_cast<long>(tid) >= tsr_d1 * 8L) return;
      uint rest = tid;
      const long v0 = static_cast<long>(rest % 8u);
      ...
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue, Use

from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.codegen.kernel_form import (
    KernelForm,
    analyze_kernel,
    constant_index,
    kernel_functions,
    sizes_of,
    static_strides,
)
from tessera.compiler.ir_io import op_location
from tessera.compiler.targets.metal.msl.expressions import EXPRESSIONS
from tessera.compiler.targets.metal.msl.prelude import prelude
from tessera.compiler.targets.metal.msl.types import BOOL, LONG, MslType, index_type, literal, msl_type
from tessera.runtime.signature import DYNAMIC, KernelSignature

MAX_BUFFERS = 31
"""Entries of Metal's buffer argument table; more buffers (a dynamic kernel's dims
buffer counted) go through one argument buffer."""
MAX_THREADS = 2**32 - 1
"""Metal's ``thread_position_in_grid`` is a ``uint``."""
DIMS = "tsr_dims"
"""The dims buffer of a dynamic kernel (``tsr_`` names cannot clash with a parameter's)."""

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_RESERVED = frozenset(
    "args auto bfloat bool break case char class const constant continue default device do double else enum "
    "explicit extern false float for fragment half if inline int kernel long metal namespace return sampler short "
    "signed static struct switch template texture this thread threadgroup tid rest true typedef typename uchar "
    "uint ulong union unsigned ushort using vertex void volatile while INFINITY NAN".split()
)


@dataclass(frozen=True)
class MslParam:
    """One buffer parameter: its name in the source and Metal element type."""

    name: str
    element: MslType
    is_output: bool

    @property
    def declaration(self) -> str:
        const = "" if self.is_output else "const "
        return f"device {const}{self.element.buffer_type}* {self.name}"


@dataclass(frozen=True)
class MslKernel:
    """A printed kernel: how to launch it (``threads`` = prod(grid), one per grid point;
    a dynamic kernel: ``signature.grid_size_of(tensors)``, and its dims buffer bound
    at ``dims_buffer``)."""

    name: str
    signature: KernelSignature
    params: tuple[MslParam, ...]
    argument_buffer: bool

    @property
    def threads(self) -> int:
        return self.signature.grid_size

    @property
    def dims_buffer(self) -> int | None:
        """The ``[[buffer(i)]]`` of the dims array (``KernelSignature.dims_of``), None if static."""
        if not self.signature.dynamic:
            return None
        return 1 if self.argument_buffer else len(self.params)


@dataclass(frozen=True)
class MslModule:
    source: str
    kernels: tuple[MslKernel, ...]

    @property
    def signatures(self) -> tuple[KernelSignature, ...]:
        return tuple(k.signature for k in self.kernels)


def print_msl(kernels: ModuleOp) -> MslModule:
    """Every ``tsr.kernel`` of ``kernels`` as one MSL source (helpers first); a
    module without kernels (every op a library call) prints the header only."""
    used: set[str] = set()
    printed = [KernelPrinter(analyze_kernel(fn), used) for fn in kernel_functions(kernels)]
    bodies = [p.print() for p in printed]
    source = prelude(used) + "\n" + "\n".join(bodies)
    return MslModule(source, tuple(p.info for p in printed))


def _extent(t: MemRefType) -> int:
    shape = t.get_shape()
    return 1 + sum((d - 1) * abs(s) for d, s in zip(shape, static_strides(t)))


class KernelPrinter:
    """Prints one kernel; ``names`` maps SSA values to their C names."""

    def __init__(self, form: KernelForm, used_helpers: set[str]):
        self.form = form
        self.name = form.name
        self.used = used_helpers
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[SSAValue, str] = {}
        self.counter = 0
        self.current: Operation | None = None  # the op being printed, for error locations
        if not _IDENT.match(self.name) or self.name in _RESERVED:
            raise CodegenError(f"kernel @{self.name}: the name is not a valid Metal identifier")
        self.dynamic = form.signature.dynamic
        self.slots = {slot: k for k, slot in enumerate(form.signature.dim_slots)}
        self.used_slots: set[int] = set()
        # Run-time sizes bound nothing: a dynamic kernel's index math is 64-bit.
        self.index = LONG if self.dynamic else index_type(self._largest_index())
        if form.signature.grid_size > MAX_THREADS:
            raise CodegenError(f"kernel @{self.name}: grid of {form.signature.grid_size} points exceeds "
                               "Metal's 32-bit thread_position_in_grid")
        self.params = self._params()
        self.info = MslKernel(self.name, form.signature, self.params,
                              len(self.params) + (1 if self.dynamic else 0) > MAX_BUFFERS)
        self.skipped: set[Operation] = set()
        self._skip_grid_only_ops()

    # -- context for expressions.py --------------------------------------------------------------
    def type(self, value: SSAValue) -> MslType:
        try:
            return msl_type(value.type, self.index)
        except CodegenError as err:
            raise self.error(err.message, self.current) from None

    def use(self, helper: str) -> None:
        self.used.add(helper)

    # -- output helpers -----------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def fresh(self) -> str:
        self.counter += 1
        return f"v{self.counter - 1}"

    def declare(self, value: SSAValue, expr: str, const: bool = True) -> str:
        name = self.fresh()
        self.emit(f"{'const ' if const else ''}{self.type(value)} {name} = {expr};")
        self.names[value] = name
        return name

    def error(self, message: str, op: Operation | None = None) -> CodegenError:
        return CodegenError(f"kernel @{self.name}: {message}", op_location(op) if op is not None else None)

    # -- signature ----------------------------------------------------------------------------
    def _largest_index(self) -> int:
        sizes = [self.form.signature.grid_size] + [_extent(t) for t in self.form.arg_types]
        for op in self.form.func.walk():
            if isinstance(op, memref.AllocaOp) and isinstance(op.results[0].type, MemRefType):
                sizes.append(_extent(op.results[0].type))
            elif isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
                sizes.append(abs(op.value.value.data))
        return max(sizes)

    def _params(self) -> tuple[MslParam, ...]:
        taken: set[str] = set()
        params = []
        for i, (arg, t, spec) in enumerate(zip(self.form.func.body.block.args, self.form.arg_types,
                                               self.form.signature.args, strict=True)):
            hint = arg.name_hint or ""
            ok = _IDENT.match(hint) and hint not in _RESERVED and not re.match(r"^(v\d+|tsr_.*)$", hint)
            name = hint if ok and hint not in taken else f"arg{i}"
            taken.add(name)
            try:
                element = msl_type(t.get_element_type(), self.index)
            except CodegenError as err:
                raise self.error(f"argument #{i}: {err.message}") from None
            params.append(MslParam(name, element, spec.is_output))
        return tuple(params)

    def _signature_lines(self) -> list[str]:
        dims = [] if self.info.dims_buffer is None else [f"    constant long* {DIMS} [[buffer({self.info.dims_buffer})]],"]
        if not self.info.argument_buffer:
            params = [f"    {p.declaration} [[buffer({i})]]," for i, p in enumerate(self.params)]
            return [f"kernel void {self.name}(", *params, *dims, "    uint tid [[thread_position_in_grid]]) {"]
        struct = [f"struct {self.name}_args {{", *(f"  {p.declaration};" for p in self.params), "};", ""]
        return [*struct, f"kernel void {self.name}(constant {self.name}_args& args [[buffer(0)]],",
                *dims, "    uint tid [[thread_position_in_grid]]) {"]

    # -- run-time sizes -----------------------------------------------------------------------
    def dim_value(self, arg: int, size: bool, d: int) -> str:
        """The local holding argument ``arg``'s run-time size (``size``) or stride along ``d``:
        ``tsr_d<k>``, read from entry ``k`` of the dims buffer at the top of the kernel."""
        k = self.slots[(arg, size, d)]
        self.used_slots.add(k)
        return f"tsr_d{k}"

    def _dims_lines(self) -> list[str]:
        """``const long tsr_d3 = tsr_dims[3];  // stride 0 of y``, for the entries the kernel reads."""
        slots = self.form.signature.dim_slots
        return [f"  const long tsr_d{k} = {DIMS}[{k}];  // {'size' if slots[k][1] else 'stride'} {slots[k][2]} of "
                f"{self.params[slots[k][0]].name}" for k in sorted(self.used_slots)]

    def _argument(self, v: SSAValue, op: Operation) -> int:
        """The position of the kernel argument ``v`` (whose run-time sizes ``op`` reads)."""
        if isinstance(v, BlockArgument) and v.owner is self.form.func.body.block:
            return v.index
        raise self.error(f"'{op.name}' reads a run-time size or stride of a memref that is not a kernel argument", op)

    def _free(self, use: Use) -> bool:
        """Whether ``use`` prints nothing: a bound of the grid loop (printed from the
        signature), the dim operand of a ``memref.dim``, or an operand of a skipped op."""
        op = use.operation
        return op is self.form.parallel or (isinstance(op, memref.DimOp) and use.index == 1) or op in self.skipped

    def _skip_grid_only_ops(self) -> None:
        """Adds to ``skipped`` the ops ahead of the grid loop that only compute its bounds
        (``memref.dim``, tiles ``(n + 7) / 8``): the grid is printed from the signature."""
        top = list(self.form.func.body.block.ops)
        for op in reversed(top[:top.index(self.form.parallel)]):
            pure = op.name.startswith("arith.") and not isinstance(op, arith.ConstantOp) or isinstance(op, memref.DimOp)
            if pure and op.results and all(self._free(u) for r in op.results for u in r.uses):
                self.skipped.add(op)

    # -- the walk -----------------------------------------------------------------------------
    def print(self) -> str:
        block = self.form.func.body.block
        for arg, p in zip(block.args, self.params, strict=True):
            self.names[arg] = p.name
            if self.info.argument_buffer:
                self.emit(f"{p.declaration} = args.{p.name};")
        for op in block.ops:
            if op is self.form.parallel:
                self._grid()
            elif op.name != "func.return" and op not in self.skipped:
                self.op(op)
        return "\n".join([*self._signature_lines(), *self._dims_lines(), *self.lines, "}", ""])

    def _grid(self) -> None:
        """The bound check of ``tid`` and its de-flattening, innermost grid dim fastest.
        A run-time extent is a ``long`` of the dims buffer; the runtime dispatches at most
        2^32 - 1 threads, so every extent fits the ``uint`` de-flattening."""
        grid = self.form.signature.grid
        extents: list[str] = []  # the uint divisor of each grid dim
        if all(isinstance(g, int) for g in grid):
            self.emit(f"if (tid >= {math.prod(g for g in grid if isinstance(g, int))}u) return;")
            extents = [f"{g}u" for g in grid]
        else:
            factors = []
            for d, g in enumerate(grid):
                if isinstance(g, int):
                    factors.append(literal(g, LONG))
                    extents.append(f"{g}u")
                    continue
                n = self.dim_value(g[0], True, g[1])
                if len(g) == 3:  # tiles of g[2] covering the size, rounded up
                    self.emit(f"const long tsr_g{d} = ({n} + {literal(g[2] - 1, LONG)}) / {literal(g[2], LONG)};")
                    n = f"tsr_g{d}"
                factors.append(n)
                extents.append(f"static_cast<uint>({n})")
            self.emit(f"if (static_cast<long>(tid) >= {' * '.join(factors)}) return;")
        ivs = self.form.parallel.body.block.args
        if len(grid) > 1:
            self.emit("uint rest = tid;")
        for d in reversed(range(len(grid))):
            if len(grid) == 1:
                source = "tid"
            elif d == 0:
                source = "rest"
            else:
                source = f"rest % {extents[d]}"
            self.declare(ivs[d], f"static_cast<{self.index}>({source})")
            if 0 < d:
                self.emit(f"rest /= {extents[d]};")
        self.block(self.form.parallel.body.block)

    def block(self, block: Block) -> list[str]:
        """Prints ``block``'s ops; the names of its terminator's operands."""
        for op in block.ops:
            if isinstance(op, (scf.YieldOp, scf.ReduceOp)):
                if isinstance(op, scf.ReduceOp) and op.operands:
                    raise self.error("scf.reduce with operands is not supported", op)
                return [self.names[v] for v in op.operands]
            self.op(op)
        return []

    def op(self, op: Operation) -> None:
        self.current = op
        if isinstance(op, arith.ConstantOp):
            self._constant(op)
        elif isinstance(op, scf.ForOp):
            self._for(op)
        elif isinstance(op, scf.IfOp):
            self._if(op)
        elif isinstance(op, memref.LoadOp):
            self._load(op)
        elif isinstance(op, memref.StoreOp):
            self._store(op)
        elif isinstance(op, memref.AllocaOp):
            self._alloca(op)
        elif isinstance(op, memref.DimOp):
            self._dim(op)
        else:
            printer = EXPRESSIONS.get(op.name)
            if printer is None or len(op.results) != 1:
                raise self.error(f"'{op.name}' is not supported by the Metal (MSL) printer", op)
            self.declare(op.results[0], printer(self, op, [self.names[v] for v in op.operands]))

    def _constant(self, op: arith.ConstantOp) -> None:
        result = op.results[0]
        if all(self._free(use) for use in result.uses):
            return  # unused, a grid bound (only the scf.parallel reads it) or the dim of a memref.dim
        value = op.value
        if not isinstance(value, (IntegerAttr, FloatAttr)):
            raise self.error(f"arith.constant of {value} is not supported (only scalar constants)", op)
        self.declare(result, literal(value.value.data, self.type(result)))

    def _for(self, op: scf.ForOp) -> None:
        lb, ub, step = (self.names[v] for v in (op.lb, op.ub, op.step))
        body = op.body.block
        accs = [self.declare(r, self.names[init], const=False) for r, init in zip(op.results, op.iter_args, strict=True)]
        iv = self.fresh()
        self.emit(f"for ({self.type(op.lb)} {iv} = {lb}; {iv} < {ub}; {iv} += {step}) {{")
        self.depth += 1
        self.names[body.args[0]] = iv
        for arg, acc in zip(body.args[1:], accs, strict=True):
            self.names[arg] = acc
        yielded = self.block(body)
        self._assign(accs, yielded, [self.type(r) for r in op.results])
        self.depth -= 1
        self.emit("}")

    def _assign(self, targets: list[str], values: list[str], types: list[MslType]) -> None:
        """``targets = values`` as a parallel assignment (a yield may read a target)."""
        pairs = [(t, v, ty) for t, v, ty in zip(targets, values, types, strict=True) if t != v]
        if any(v in targets for _, v, _ in pairs):
            temps = [(t, self.fresh(), v, ty) for t, v, ty in pairs]
            for _, tmp, v, ty in temps:
                self.emit(f"const {ty} {tmp} = {v};")
            pairs = [(t, tmp, ty) for t, tmp, _, ty in temps]
        for t, v, _ in pairs:
            self.emit(f"{t} = {v};")

    def _if(self, op: scf.IfOp) -> None:
        results = []
        for r in op.results:
            name = self.fresh()
            self.emit(f"{self.type(r)} {name};")
            self.names[r] = name
            results.append(name)
        types = [self.type(r) for r in op.results]
        self.emit(f"if ({self.names[op.cond]}) {{")
        for i, region in enumerate((op.true_region, op.false_region)):
            if not region.blocks:
                continue
            if i == 1:
                self.emit("} else {")
            self.depth += 1
            self._assign(results, self.block(region.block), types)
            self.depth -= 1
        self.emit("}")

    # -- memory -------------------------------------------------------------------------------
    def _offset(self, op: memref.LoadOp | memref.StoreOp, t: MemRefType) -> str:
        """``sum(index_k * stride_k)``: a static stride as a literal, a dynamic one as its dims entry."""
        terms = []
        for d, (idx, stride) in enumerate(zip(op.indices, static_strides(t), strict=True)):
            name = self.names[idx]
            if stride == DYNAMIC:
                terms.append(f"{name} * {self.dim_value(self._argument(op.memref, op), False, d)}")
            elif stride != 0:
                terms.append(name if stride == 1 else f"{name} * {literal(stride, self.index)}")
        return " + ".join(terms) or "0"

    def _dim(self, op: memref.DimOp) -> None:
        """``memref.dim %x, %c0``: a static size as a literal, a dynamic one from the dims buffer."""
        t = self._memref_type(op.source, op)
        d = constant_index(op.index)
        if d is None or not 0 <= d < len(t.get_shape()):
            raise self.error("memref.dim needs a constant dim of its memref", op)
        n = sizes_of(t)[d]
        self.declare(op.results[0], literal(n, self.index) if n != DYNAMIC
                     else self.dim_value(self._argument(op.source, op), True, d))

    def _memref_type(self, v: SSAValue, op: Operation) -> MemRefType:
        if not isinstance(v.type, MemRefType):
            raise self.error(f"'{op.name}' needs a memref operand, got {v.type}", op)
        return v.type

    def _load(self, op: memref.LoadOp) -> None:
        t = self._memref_type(op.memref, op)
        access = f"{self.names[op.memref]}[{self._offset(op, t)}]"
        self.declare(op.results[0], f"{access} != 0" if self.type(op.results[0]) is BOOL else access)

    def _store(self, op: memref.StoreOp) -> None:
        t = self._memref_type(op.memref, op)
        value = self.names[op.value]
        if self.type(op.value) is BOOL:
            value = f"static_cast<uchar>({value})"
        self.emit(f"{self.names[op.memref]}[{self._offset(op, t)}] = {value};")

    def _alloca(self, op: memref.AllocaOp) -> None:
        t = op.results[0].type
        if op.operands or not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
            raise self.error(f"memref.alloca needs a static shape, got {t}", op)
        name = self.fresh()
        self.emit(f"{msl_type(t.get_element_type(), self.index).buffer_type} {name}[{max(_extent(t), 1)}];")
        self.names[op.results[0]] = name
