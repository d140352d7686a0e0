"""The three instruction paths, as small overrides of one microkernel generator.

    path = get_isa("avx512vnni")     # vpdpbusd zmm: 16 columns x 4 K per instruction
    path.nr                          # 64: a register tile is 6 rows x 4 zmm (64 columns)
    select_isa({"avx2", "avxvnni"})  # "avxvnni"

Every path multiplies one packed K-group of B (4 consecutive K values of
``nr`` columns, see ``packing``) by a broadcast 4-byte word of A, and adds into
int32 accumulators. The generator (``microkernel``) asks a path for: the B
operands of a K-group (``b_operands``), the A operand (``a_operand``), the
multiply-add (``madd``) and how accumulators become one int32 per column
(``finish``).

Exactness, path by path (every int32 addition wraps, like torch's int32
accumulation, so the result is the exact sum whenever it fits int32):

* ``avx512vnni``/``avxvnni`` (``vpdpbusd``): each int32 lane gets
  ``u0*s0 + u1*s1 + u2*s2 + u3*s3`` of four u8 x s8 products computed in full
  precision (|sum| <= 4 * 255 * 128) and added without saturation (that is
  ``vpdpbusds``, never used). u8 A x s8 B maps directly. For s8 A the roles
  swap: B is packed as ``B + 128`` (a u8, XOR 0x80) and A is the s8 operand:
  ``sum a*(b+128) = sum a*b + 128*rowsum(a)``, so the accumulators start at
  ``-128*rowsum(a)`` (computed per row with ``vpdpbusd(ones, a)``, also exact).
  Unlike shifting A, this costs nothing in the inner loop.
* ``avx2`` (``vpmaddwd``): bytes are widened to int16 (A zero- or
  sign-extended, B sign-extended) and ``vpmaddwd`` forms ``a0*b0 + a1*b1`` in
  int32: |each product| <= 255 * 128 = 32640 and |the pair| <= 65280, exact
  (``vpmaddwd`` only wraps for -32768 * -32768 twice, impossible from bytes).
  Unlike ``vpmaddubsw`` nothing saturates at int16, and s8 A needs no shift.
"""

from __future__ import annotations

from collections.abc import Iterable

from llvmlite import ir

from tessera.compiler.codegen.irbuild import I8, I16, I32, byte_ptr, intrinsic, splat, vec
from tessera.compiler.targets.x86.codegen import enabled_features
from tessera.compiler.targets.x86.int8_gemm.errors import IsaUnavailable, UnknownIsa
from tessera.compiler.targets.x86.int8_gemm.spec import ISAS


class IsaPath:
    """Knobs and hooks of one instruction path (subclasses override a few)."""

    name = "abstract"
    features = ""
    """LLVM feature string of a portable build (runs on any CPU with the path)."""
    requires: tuple[str, ...] = ()
    """LLVM feature names the path's instructions need."""
    lanes = 8
    """int32 lanes of an output vector (= columns it covers)."""
    mr = 4
    nv = 1
    """Register tile: ``mr`` rows x ``nv`` output vectors (``nr = lanes * nv`` columns)."""
    vnni = False

    @property
    def nr(self) -> int:
        return self.lanes * self.nv

    @property
    def acc_type(self) -> ir.VectorType:
        return vec(I32, self.lanes)

    def accumulators_per_row(self) -> int:
        return self.nv

    def flips_b(self, a_signed: bool) -> bool:
        """Whether B is packed as ``B + 128`` (u8) for this A."""
        return False

    def needs_rowsum(self, a_signed: bool) -> bool:
        return False

    def b_operands(self, b: ir.IRBuilder, group: ir.Value) -> list[ir.Value]:
        """The operands of one K-group (``nr * 4`` bytes at ``group``)."""
        raise NotImplementedError

    def a_operand(self, b: ir.IRBuilder, word: ir.Value, a_signed: bool) -> ir.Value:
        """The operand of A's 4 bytes ``word`` (i32) of one row."""
        raise NotImplementedError

    def madd(self, b: ir.IRBuilder, acc: ir.Value, a_op: ir.Value, b_op: ir.Value, a_signed: bool) -> ir.Value:
        raise NotImplementedError

    def finish(self, b: ir.IRBuilder, accs: list[ir.Value]) -> list[ir.Value]:
        """One row's accumulators as ``nv`` vectors of ``lanes`` int32 columns."""
        return accs

    def sum_bytes(self, b: ir.IRBuilder, acc: ir.Value, chunk: ir.Value) -> ir.Value:
        """``acc`` plus the signed bytes of ``chunk`` (VNNI paths, for s8 A)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<isa {self.name}: {self.mr}x{self.nr} tile>"


class _Vnni(IsaPath):
    """``vpdpbusd``: 4 u8 x s8 products per int32 lane, accumulated exactly."""

    vnni = True
    intrinsic_name = ""

    @property
    def bytes_type(self) -> ir.VectorType:
        return vec(I8, 4 * self.lanes)

    def flips_b(self, a_signed: bool) -> bool:
        return a_signed

    def needs_rowsum(self, a_signed: bool) -> bool:
        return a_signed

    def _dpbusd(self, b: ir.IRBuilder, acc: ir.Value, u8: ir.Value, s8: ir.Value) -> ir.Value:
        fn = intrinsic(b.module, self.intrinsic_name, self.acc_type, [self.acc_type, self.bytes_type, self.bytes_type])
        return b.call(fn, [acc, u8, s8])

    def b_operands(self, b: ir.IRBuilder, group: ir.Value) -> list[ir.Value]:
        step = 4 * self.lanes
        return [b.load(byte_ptr(b, group, v * step), typ=self.bytes_type, align=1) for v in range(self.nv)]

    def a_operand(self, b: ir.IRBuilder, word: ir.Value, a_signed: bool) -> ir.Value:
        return b.bitcast(splat(b, word, self.lanes), self.bytes_type)

    def madd(self, b: ir.IRBuilder, acc: ir.Value, a_op: ir.Value, b_op: ir.Value, a_signed: bool) -> ir.Value:
        # s8 A: B was packed as B + 128 and is the unsigned operand.
        return self._dpbusd(b, acc, b_op, a_op) if a_signed else self._dpbusd(b, acc, a_op, b_op)

    def sum_bytes(self, b: ir.IRBuilder, acc: ir.Value, chunk: ir.Value) -> ir.Value:
        ones = ir.Constant(self.bytes_type, [1] * (4 * self.lanes))
        return self._dpbusd(b, acc, ones, chunk)


class Avx512Vnni(_Vnni):
    """AVX-512 VNNI: EVEX ``vpdpbusd`` on zmm; 6 x 64 tile (24 accumulators of 32 zmm)."""

    name = "avx512vnni"
    features = "+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512vnni,+avx2,+avx,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2"
    requires = ("avx512f", "avx512vnni")
    lanes, mr, nv = 16, 6, 4
    intrinsic_name = "llvm.x86.avx512.vpdpbusd.512"


class AvxVnni(_Vnni):
    """AVX-VNNI: VEX ``{vex} vpdpbusd`` on ymm (same intrinsic as AVX512VL's, selected
    by ``+avxvnni`` without AVX-512); 6 x 16 tile (12 accumulators of 16 ymm)."""

    name = "avxvnni"
    features = "+avx2,+avx,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2,+avxvnni"
    requires = ("avx2", "avxvnni")
    lanes, mr, nv = 8, 6, 2
    intrinsic_name = "llvm.x86.avx512.vpdpbusd.256"


class Avx2(IsaPath):
    """AVX2: bytes widened to int16, ``vpmaddwd`` (pairs into int32), ``vpaddd``.

    A K-group of 8 columns is 32 bytes: its two 16-byte halves (4 columns x 4 K)
    are sign-extended and multiplied by A's 4 bytes widened and repeated, giving
    per column two partial sums (K 0-1 and K 2-3) that ``finish`` adds."""

    name = "avx2"
    features = "+avx2,+avx,+fma,+f16c,+bmi,+bmi2,+popcnt,+sse4.2"
    requires = ("avx2",)
    lanes, mr, nv = 8, 3, 1

    def accumulators_per_row(self) -> int:
        return 2 * self.nv

    def b_operands(self, b: ir.IRBuilder, group: ir.Value) -> list[ir.Value]:
        out = []
        for h in range(2 * self.nv):
            out.append(b.sext(b.load(byte_ptr(b, group, 16 * h), typ=vec(I8, 16), align=1), vec(I16, 16)))
        return out

    def a_operand(self, b: ir.IRBuilder, word: ir.Value, a_signed: bool) -> ir.Value:
        four = b.bitcast(splat(b, word, 4), vec(I8, 16))
        return b.sext(four, vec(I16, 16)) if a_signed else b.zext(four, vec(I16, 16))

    def madd(self, b: ir.IRBuilder, acc: ir.Value, a_op: ir.Value, b_op: ir.Value, a_signed: bool) -> ir.Value:
        fn = intrinsic(b.module, "llvm.x86.avx2.pmadd.wd", self.acc_type, [vec(I16, 16), vec(I16, 16)])
        return b.add(acc, b.call(fn, [a_op, b_op]))

    def finish(self, b: ir.IRBuilder, accs: list[ir.Value]) -> list[ir.Value]:
        # accs[2v] = columns 8v..8v+3, accs[2v+1] = 8v+4..8v+7, each column as two lanes.
        even = ir.Constant(vec(I32, 8), list(range(0, 16, 2)))
        odd = ir.Constant(vec(I32, 8), list(range(1, 16, 2)))
        out = []
        for v in range(self.nv):
            lo, hi = accs[2 * v], accs[2 * v + 1]
            out.append(b.add(b.shuffle_vector(lo, hi, even), b.shuffle_vector(lo, hi, odd)))
        return out


PATHS: dict[str, IsaPath] = {p.name: p for p in (Avx512Vnni(), AvxVnni(), Avx2())}


def get_isa(name: str) -> IsaPath:
    try:
        return PATHS[name]
    except KeyError:
        raise UnknownIsa(f"unknown int8 GEMM isa {name!r}; known: {', '.join(ISAS)}") from None


def normalize_features(features: Iterable[str]) -> frozenset[str]:
    """LLVM names (``avx512vnni``), ``+``-prefixed ones, or /proc/cpuinfo flags
    (``avx512_vnni``, ``avx_vnni``) as one set of LLVM-style names."""
    out = set()
    for f in features:
        f = f.strip()
        if f.startswith("-"):
            continue
        out.add(f.lstrip("+").replace("_", "").lower())
    return frozenset(out)


def host_features() -> frozenset[str]:
    """This CPU's features as LLVM reports them."""
    from tessera.runtime.cpu import host_features as _host

    return normalize_features(_host())


def cpuinfo_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The kernel's CPU flags (``avx512_vnni``, ``avx_vnni``...) normalized like
    :func:`normalize_features`; empty where there is no /proc/cpuinfo."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return normalize_features(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def can_run(isa: str, features: Iterable[str] | None = None) -> bool:
    have = host_features() if features is None else normalize_features(features)
    return set(get_isa(isa).requires) <= have


def select_isa(features: Iterable[str] | None = None) -> str:
    """The fastest path a CPU with ``features`` (default: this host) runs:
    ``avx512vnni`` > ``avxvnni`` > ``avx2``.

        select_isa(["avx2", "avx_vnni"])  ->  "avxvnni"
    """
    have = host_features() if features is None else normalize_features(features)
    for name in ISAS:  # fastest first
        if set(PATHS[name].requires) <= have:
            return name
    raise IsaUnavailable("no int8 GEMM path for this CPU: it needs at least avx2")


def check_features(isa: str, feature_string: str) -> None:
    """Raises :class:`IsaUnavailable` unless ``feature_string`` enables ``isa``'s
    instructions (LLVM aborts the process on an intrinsic its target lacks)."""
    missing = [f for f in get_isa(isa).requires if f not in enabled_features(feature_string)]
    if missing:
        raise IsaUnavailable(f"isa {isa!r} needs +{', +'.join(missing)} in the target features {feature_string!r}")
