"""The Metal target without Apple hardware: the MSL printed for every example
model (f32, f16, bf16) compiles as C++ against test/msl/metal_stub.h, whose
half/bfloat accept no implicit conversion (so a bare literal is an error); the
same C++, with real half/bfloat rounding, runs each kernel over its grid and
matches the kernel IR reference evaluator on random inputs; typed literals,
errors, stages and packaging. Tests that need an Apple GPU or xcrun skip."""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from xdsl.dialects import func

from tessera.compiler.capture import capture
from tessera.compiler.codegen.errors import CodegenError
from tessera.compiler.host_program import build_host_program
from tessera.compiler.interpreter import interpret
from tessera.compiler.ir_io import parse_module
from tessera.compiler.placements import in_layout
from tessera.compiler.stage_io import CompileOptions
from tessera.compiler.targets.metal.msl import MAX_BUFFERS, msl_artifact, print_msl
from tessera.compiler.targets.metal.msl.metallib import ToolchainMissing, build_metallib, xcrun_path
from tessera.compiler.targets.metal.msl.types import BFLOAT, FLOAT, HALF, INT, LONG, literal
from tessera.compiler import targets
from tessera.compiler.stages import fuse_kernels, lower_kernels, run_stages, stage_names
from tessera.runtime.errors import SignatureMismatch
from tessera.runtime.artifact import Artifact
from tessera.runtime.kernel import Kernel
from tessera.runtime.module import Module
from tessera.runtime.mps import MpsKernel
from tessera.runtime.options import RuntimeOptions

from conftest import EXAMPLE_NAMES, REPO, load_example_module, random_tensor
from kernel_eval import allocate_for, memref_strides, run_kernel, torch_dtype
from kernel_testing import kernel, memref, parse_kernels
from test_dynamic_kernels import CASES as DYNAMIC_CASES

STUB_DIR = REPO / "test" / "msl"
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is needed to compile MSL as C++")
needs_mps = pytest.mark.skipif(not torch.backends.mps.is_available(), reason="needs an Apple GPU (MPS)")
needs_xcrun = pytest.mark.skipif(xcrun_path() is None, reason="needs Apple's Metal toolchain (xcrun)")
# What the strict check enforces beyond the stub's explicit constructors: no float<->double
# mixing (a bare 0.5 next to a float), no implicit narrowing between integer types.
STRICT = ("-std=c++17", "-x", "c++", "-Wall", "-Wextra", "-Wno-attributes", "-Werror", "-Wconversion",
          "-Wdouble-promotion", "-Wfloat-conversion", "-Wno-unused-parameter", "-Wno-unused-function")
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


# -- kernel IR of the example models on the metal pipeline --------------------------------------
@functools.cache
def metal_kernels(name: str, dtype: str, small: bool = False):
    """The kernels module of example ``name`` cast to ``dtype``, on the metal pipeline."""
    mod = load_example_module(name)
    model, args = (mod.make_block(channels=8), (torch.randn(1, 8, 3, 6, 6),)) if small else mod.example()
    if dtype != "f32":
        model, args = model.to(DTYPES[dtype]), tuple(a.to(DTYPES[dtype]) for a in args)
    (gm,) = capture(model, args, training=False).forward
    return run_stages(gm, "metal", upto="kernel")["kernel"].value.kernels


def example_cases():
    for dtype in DTYPES:
        for name in EXAMPLE_NAMES:
            if name == "int8_linear" and dtype != "f32":
                continue  # integer weights: it has no half-precision variant
            yield name, dtype


def compile_cpp(source: str, tmp: Path, *flags: str) -> subprocess.CompletedProcess:
    path = tmp / "kernels.cpp"
    path.write_text(source)
    return subprocess.run([GXX, *flags, "-I", str(STUB_DIR), str(path)], capture_output=True, text=True)


def in_namespace(ns: str, source: str) -> str:
    return f"namespace {ns} {{\n{source}\n}}  // namespace {ns}\n"


TYPED_HALF = re.compile(r"const (half|bfloat) v\d+ = static_cast<(half|bfloat)>\(")
BARE = re.compile(r"(half|bfloat) v\d+ = (-?[0-9.]|[A-Z])")


# -- the strict-typing check ------------------------------------------------------------------------
@needs_gxx
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_example_models_print_msl_that_compiles_strictly(dtype, tmp_path):
    """All example models in one translation unit per dtype (one namespace each)."""
    units, sources = [], {}
    for name, dt in example_cases():
        if dt != dtype:
            continue
        sources[name] = print_msl(metal_kernels(name, dtype)).source
        units.append(in_namespace(name, sources[name]))
    proc = compile_cpp('#include "metal_stub.h"\n' + "".join(units), tmp_path, "-fsyntax-only", *STRICT)
    assert proc.returncode == 0, proc.stderr[:4000]
    text = "\n".join(sources.values())
    assert text.count("kernel void ") >= 10
    assert not BARE.search(text), BARE.search(text)
    if dtype != "f32":
        half = "half" if dtype == "f16" else "bfloat"
        assert f"device const {half}*" in text and TYPED_HALF.search(text), "no typed half-precision constant"
        # the causal pad of the video VAE: a typed zero selected outside the input
        vae = sources["video_vae_block"]
        assert f"const {half} " in vae and f"static_cast<{half}>(0.0f)" in vae


CORRUPTIONS = {
    "bare double literal": (r"static_cast<bfloat>\(0\.0f\)", "0.0"),
    "bare float literal": (r"static_cast<bfloat>\(0\.0f\)", "0.0f"),
    "float value as bfloat": (r"const bfloat (v\d+) = static_cast<bfloat>\((v\d+)\);", r"const bfloat \1 = \2;"),
    "bfloat arithmetic": (r"static_cast<bfloat>\(static_cast<float>\((v\d+)\) \+ static_cast<float>\((v\d+)\)\)",
                          r"\1 + \2"),
}


@needs_gxx
@pytest.mark.parametrize("what", list(CORRUPTIONS))
def test_untyped_code_fails_the_strict_check(what, tmp_path):
    """The check bites: the bf16 video VAE's MSL with one typed literal or cast undone."""
    source = print_msl(metal_kernels("video_vae_block", "bf16")).source
    pattern, replacement = CORRUPTIONS[what]
    bad, n = re.subn(pattern, replacement, source, count=1)
    assert n == 1, f"nothing to corrupt for {what}"
    assert compile_cpp(source, tmp_path, "-fsyntax-only", *STRICT).returncode == 0
    proc = compile_cpp(bad, tmp_path, "-fsyntax-only", *STRICT)
    assert proc.returncode != 0 and "bfloat" in proc.stderr, proc.stderr


@needs_gxx
def test_a_bare_literal_in_half_context_fails(tmp_path):
    t = memref([8], "f16")
    k = kernel("k", [("x", t), ("y", t)], [1], [8], f"""
    %c = arith.constant 5.000000e-01 : f16
    %v = memref.load %x[%i0] : {t}
    %r = arith.mulf %v, %c : f16
    memref.store %r, %y[%i0] : {t}""")
    source = print_msl(parse_kernels(k)).source
    assert re.search(r"const half v\d+ = static_cast<half>\(0\.5f\);", source)
    assert compile_cpp(source, tmp_path, "-fsyntax-only", *STRICT).returncode == 0
    proc = compile_cpp(source.replace("static_cast<half>(0.5f)", "0.5"), tmp_path, "-fsyntax-only", *STRICT)
    assert proc.returncode != 0 and "conversion from 'double' to non-scalar type 'const half'" in proc.stderr.replace("‘", "'").replace("’", "'")


# -- running the printed code (C++ with real half/bfloat rounding) --------------------------------
def driver(ns: str, module) -> str:
    """``extern "C" void <ns>_<kernel>(void** buffers, uint threads)``: every thread in turn
    (a dynamic kernel's dims array is the buffer after its tensors)."""
    out = []
    for k in module.kernels:
        casts = ", ".join(f"reinterpret_cast<{'' if p.is_output else 'const '}{p.element.buffer_type}*>(b[{i}])"
                          for i, p in enumerate(k.params))
        dims = "" if k.dims_buffer is None else f"reinterpret_cast<long*>(b[{len(k.params)}]), "
        if k.argument_buffer:
            body = f"{ns}::{k.name}_args a{{{casts}}}; for (uint t = 0; t < n; ++t) {ns}::{k.name}(a, {dims}t);"
        else:
            body = f"for (uint t = 0; t < n; ++t) {ns}::{k.name}({casts}, {dims}t);"
        out.append(f'extern "C" void {ns}_{k.name}(void** b, uint n) {{ {body} }}')
    return "\n".join(out) + "\n"


class CppKernels:
    """Printed MSL of several kernels modules compiled into one shared library;
    each kernel launches through a runtime ``Kernel`` that takes tensors."""

    def __init__(self, modules: dict[str, object], tmp: Path):
        self.printed = {ns: print_msl(m) for ns, m in modules.items()}
        tu = '#include "metal_stub.h"\n' + "".join(
            in_namespace(ns, p.source) + driver(ns, p) for ns, p in self.printed.items())
        so = tmp / "kernels.so"
        proc = compile_cpp(tu, tmp, "-std=c++17", "-x", "c++", "-O1", "-shared", "-fPIC", "-Wno-attributes", "-o", str(so))
        assert proc.returncode == 0, proc.stderr[:4000]
        self.lib = ctypes.CDLL(str(so))

    def kernel(self, ns: str, name: str) -> Kernel:
        """The kernel launched as ``runtime/mps.py`` launches it (``MpsKernel``: tensors, then
        a dynamic kernel's dims as a list of ints), here on CPU tensors."""
        info = next(k for k in self.printed[ns].kernels if k.name == name)
        entry = getattr(self.lib, f"{ns}_{name}")

        def launcher(args, chunks, total):
            threads = -(-total // 64) * 64 + 64  # a rounded-up dispatch: the bound check must hold
            keep = [a if isinstance(a, torch.Tensor) else (ctypes.c_int64 * len(a))(*a) for a in args]
            pointers = [k.data_ptr() if isinstance(k, torch.Tensor) else ctypes.addressof(k) for k in keep]
            entry((ctypes.c_void_p * len(pointers))(*pointers), ctypes.c_uint(threads))

        return MpsKernel(info.signature, torch.device("cpu"), launcher, RuntimeOptions(cache_dir=None), takes_tensors=True)

    def module(self, ns: str) -> Module:
        """The kernels of ``ns`` as a runtime Module (what a host program launches)."""
        printed = self.printed[ns]
        kernels = {k.name: self.kernel(ns, k.name) for k in printed.kernels}
        art = Artifact("metal", "msl", printed.source.encode("ascii"), printed.signatures)
        return Module(art, kernels, keepalive=self)


def random_input(t, gen: torch.Generator) -> torch.Tensor:
    dtype, shape = torch_dtype(t.element_type), t.get_shape()
    small = torch.Size(shape).numel() <= 64  # norm statistics and parameters: keep rsqrt real
    return random_tensor(shape, dtype, memref_strides(t), gen, positive=small)


def check_against_reference(k: Kernel, fn: func.FuncOp, seed: int = 0) -> int:
    """Runs ``k`` and the reference evaluator on the same random inputs; the number of outputs compared."""
    types = [a.type for a in fn.body.block.args]
    n_in = len(types) - len(k.signature.outputs)
    gen = torch.Generator().manual_seed(seed)
    inputs = [random_input(t, gen) for t in types[:n_in]]
    outs = [allocate_for(t) for t in types[n_in:]]
    k(*inputs, *outs)
    expected = run_kernel(fn, [x.clone() for x in inputs])
    for i, (got, want) in enumerate(zip(outs, expected)):
        if not want.dtype.is_floating_point:
            assert torch.equal(got, want), f"@{k.name} output #{i}"
            continue
        tol = TOL[want.dtype]
        scale = max(1.0, float(want.float().abs().nan_to_num(0, 0, 0).max()))
        torch.testing.assert_close(got, want, rtol=tol, atol=tol * scale, equal_nan=True,
                                   msg=lambda m: f"@{k.name} output #{i}: {m}")
        assert not got.isnan().all(), f"@{k.name} output #{i} was not written"
    return len(outs)


@pytest.fixture(scope="module")
def example_binaries(tmp_path_factory):
    if GXX is None:
        pytest.skip("g++ is needed to compile MSL as C++")
    modules = {f"vae2d_{dt}": metal_kernels("vae2d_block", dt) for dt in DTYPES}
    modules.update({f"video_{dt}": metal_kernels("video_vae_block", dt, small=True) for dt in ("f16", "bf16")})
    modules["mlp_f16"] = metal_kernels("mlp", "f16")
    return modules, CppKernels(modules, tmp_path_factory.mktemp("msl_examples"))


@pytest.mark.parametrize("ns", ["vae2d_f32", "vae2d_f16", "vae2d_bf16", "video_f16", "video_bf16", "mlp_f16"])
def test_printed_kernels_compute_what_the_kernel_ir_means(ns, example_binaries):
    """GroupNorm statistics and normalize+SiLU, the causal pad (typed zero), the
    nearest upsample with the residual add, LayerNorm and GELU (erf), in half
    precision computed natively: each kernel's C++ run matches the reference
    evaluator of its kernel IR (bf16/f16 arithmetic rounded per op in both)."""
    modules, binaries = example_binaries
    compared = 0
    for fn in modules[ns].body.block.ops:
        compared += check_against_reference(binaries.kernel(ns, fn.sym_name.data), fn)
    assert compared >= 3


@needs_gxx
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_rounding_log1p_and_expm1_print_msl_that_runs(dtype, tmp_path):
    """floor/ceil/trunc/round (``rint``: halves to even) and the compensated
    log1p/expm1, printed as MSL: its C++ run matches the kernel IR's meaning."""
    from test_ptx import _rounding_and_near_zero

    (gm,) = capture(_rounding_and_near_zero, (torch.randn(8, 50).to(DTYPES[dtype]),)).forward
    kernels = run_stages(gm, "metal", upto="kernel")["kernel"].value.kernels
    binaries = CppKernels({"r": kernels}, tmp_path)
    assert sum(check_against_reference(binaries.kernel("r", fn.sym_name.data), fn) for fn in kernels.body.block.ops) >= 2


def _special_kernels() -> str:
    f, i1, i32 = memref([6], "f32"), memref([6], "i1"), memref([6], "i32")
    h = memref([6], "f16")
    many = [(f"x{j}", memref([4], "f32")) for j in range(MAX_BUFFERS)] + [("acc", memref([4], "f32"))]
    return "\n".join([
        # NaN and signed zeros through maximumf/minimumf; unordered/ordered compares; i1 stores.
        kernel("nan_semantics", [("a", f), ("b", f), ("mx", f), ("mn", f), ("une", i1), ("ord", i1)], [2, 3, 4, 5],
               [6], f"""
    %x = memref.load %a[%i0] : {f}
    %y = memref.load %b[%i0] : {f}
    %m = arith.maximumf %x, %y : f32
    %n = arith.minimumf %x, %y : f32
    %u = arith.cmpf une, %x, %y : f32
    %o = arith.cmpf ord, %x, %y : f32
    memref.store %m, %mx[%i0] : {f}
    memref.store %n, %mn[%i0] : {f}
    memref.store %u, %une[%i0] : {i1}
    memref.store %o, %ord[%i0] : {i1}"""),
        # integer division/remainder in every rounding, shifts, unsigned ops, int<->float.
        kernel("integers", [("p", i32), ("q", i32), ("fl", i32), ("ce", i32), ("rs", i32), ("su", i32), ("fp", f)],
               [2, 3, 4, 5, 6], [6], f"""
    %x = memref.load %p[%i0] : {i32}
    %y = memref.load %q[%i0] : {i32}
    %a = arith.floordivsi %x, %y : i32
    %b = arith.ceildivsi %x, %y : i32
    %c = arith.remsi %x, %y : i32
    %c4 = arith.constant 4 : i32
    %d = arith.shrui %x, %c4 : i32
    %e = arith.maxsi %d, %y : i32
    %g = arith.sitofp %x : i32 to f32
    memref.store %a, %fl[%i0] : {i32}
    memref.store %b, %ce[%i0] : {i32}
    memref.store %c, %rs[%i0] : {i32}
    memref.store %e, %su[%i0] : {i32}
    memref.store %g, %fp[%i0] : {f}"""),
        # half math through float, scf.if with results, a loop whose iter_args swap, scratch memory.
        kernel("control", [("x", h), ("y", h), ("z", f)], [1, 2], [6], f"""
    %v = memref.load %x[%i0] : {h}
    %zero = arith.constant 0.000000e+00 : f16
    %pos = arith.cmpf ogt, %v, %zero : f16
    %r = scf.if %pos -> (f16) {{
      %t = math.tanh %v : f16
      scf.yield %t : f16
    }} else {{
      %e = math.exp %v : f16
      scf.yield %e : f16
    }}
    memref.store %r, %y[%i0] : {h}
    %buf = memref.alloca() : memref<3xf32>
    %one = arith.constant 1.000000e+00 : f32
    %two = arith.constant 2.000000e+00 : f32
    %c3 = arith.constant 3 : index
    %p, %q = scf.for %k = %c0 to %c3 step %c1 iter_args(%s = %one, %t = %two) -> (f32, f32) {{
      %w = arith.addf %s, %t : f32
      memref.store %w, %buf[%k] : memref<3xf32>
      scf.yield %t, %w : f32, f32
    }}
    %l = memref.load %buf[%c1] : memref<3xf32>
    %sum = arith.addf %p, %l : f32
    memref.store %sum, %z[%i0] : {f}"""),
        # more buffers than Metal's table: one argument buffer.
        kernel("many_buffers", many, [MAX_BUFFERS], [4], "\n".join(
            [f"    %l{j} = memref.load %x{j}[%i0] : memref<4xf32>" for j in range(MAX_BUFFERS)]
            + ["    %s0 = arith.addf %l0, %l1 : f32"]
            + [f"    %s{j - 1} = arith.addf %s{j - 2}, %l{j} : f32" for j in range(2, MAX_BUFFERS)]
            + [f"    memref.store %s{MAX_BUFFERS - 2}, %acc[%i0] : memref<4xf32>"])),
    ])


@needs_gxx
def test_printed_special_cases_run_correctly(tmp_path):
    kernels = parse_kernels(_special_kernels())
    source = print_msl(kernels).source
    assert "struct many_buffers_args {" in source and "constant many_buffers_args& args [[buffer(0)]]" in source
    assert "[[buffer(1)]]" not in source.split("kernel void many_buffers")[1]
    binaries = CppKernels({"special": kernels}, tmp_path)
    run = lambda name, *ts: binaries.kernel("special", name)(*ts)  # noqa: E731

    nan, inf = float("nan"), float("inf")
    a = torch.tensor([nan, 1.0, -0.0, 0.0, 3.0, -inf])
    b = torch.tensor([2.0, nan, 0.0, -0.0, -1.0, 5.0])
    mx, mn, une, ord_ = torch.empty(6), torch.empty(6), torch.empty(6, dtype=torch.bool), torch.empty(6, dtype=torch.bool)
    run("nan_semantics", a, b, mx, mn, une, ord_)
    torch.testing.assert_close(mx, torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(mn, torch.minimum(a, b), equal_nan=True)
    # MLIR (and LLVM's llvm.maximum) order -0 below +0; torch.maximum does not
    assert mx[2:4].signbit().tolist() == [False, False] and mn[2:4].signbit().tolist() == [True, True]
    assert torch.equal(une, a != b) and torch.equal(ord_, ~(a.isnan() | b.isnan()))

    p = torch.tensor([7, -7, 7, -7, -100, 2**31 - 1], dtype=torch.int32)
    q = torch.tensor([2, 2, -2, -2, 3, 7], dtype=torch.int32)
    outs = [torch.empty(6, dtype=torch.int32) for _ in range(4)] + [torch.empty(6)]
    run("integers", p, q, *outs)
    assert torch.equal(outs[0], torch.div(p, q, rounding_mode="floor"))
    assert torch.equal(outs[1], -torch.div(-p, q, rounding_mode="floor"))
    assert torch.equal(outs[2], torch.fmod(p, q))
    shr = torch.tensor([(v & 0xFFFFFFFF) >> 4 for v in p.tolist()], dtype=torch.int64).to(torch.int32)
    assert torch.equal(outs[3], torch.maximum(shr, q))
    assert torch.equal(outs[4], p.float())

    x = torch.tensor([-2.0, -0.5, 0.25, 1.0, 3.0, -7.0], dtype=torch.float16)
    y, z = torch.empty(6, dtype=torch.float16), torch.empty(6)
    run("control", x, y, z)
    want = torch.where(x > 0, torch.tanh(x.float()), torch.exp(x.float())).half()
    torch.testing.assert_close(y, want, rtol=1e-3, atol=1e-3)
    # (s, t): (1, 2) -> (2, 3) -> (3, 5) -> (5, 8); buf = [3, 5, 8]; p = 5; p + buf[1] = 10
    assert torch.equal(z, torch.full((6,), 10.0))

    xs = [torch.randn(4) for _ in range(MAX_BUFFERS)]
    acc = torch.empty(4)
    run("many_buffers", *xs, acc)
    expect = xs[0].clone()
    for t in xs[1:]:
        expect = expect + t
    torch.testing.assert_close(acc, expect, rtol=0, atol=0)


# -- printer details -------------------------------------------------------------------------------
def test_literals_are_typed_and_rounded_once():
    assert literal(0.0, HALF) == "static_cast<half>(0.0f)"
    assert literal(0.1, HALF) == "static_cast<half>(0.099975586f)"  # the half nearest 0.1, exact in float
    assert literal(0.1, BFLOAT) == "static_cast<bfloat>(0.100097656f)"
    assert literal(1e-5, FLOAT) == "1e-05f"
    assert literal(70000.0, HALF) == "static_cast<half>(INFINITY)"
    assert literal(float("-inf"), BFLOAT) == "static_cast<bfloat>(-INFINITY)"
    assert literal(float("nan"), FLOAT) == "NAN"
    assert literal(-2**31, INT) == "(-2147483647 - 1)"
    assert literal(5, LONG) == "5L"
    assert literal(255, msl_char()) == "static_cast<char>(-1)"


def msl_char():
    from tessera.compiler.targets.metal.msl.types import CHAR

    return CHAR


def test_index_math_is_int_unless_a_buffer_needs_long():
    t = memref([8], "f32")
    small = kernel("small", [("x", t), ("y", t)], [1], [8], f"""
    %v = memref.load %x[%i0] : {t}
    memref.store %v, %y[%i0] : {t}""")
    big_t = memref([3, 1024], "i8", strides=[2**30, 1])
    big = kernel("big", [("x", big_t), ("y", big_t)], [1], [3], f"""
    %v = memref.load %x[%i0, %c0] : {big_t}
    memref.store %v, %y[%i0, %c0] : {big_t}""")
    src = print_msl(parse_kernels(small, big)).source
    small_src, big_src = src.split("kernel void big")
    assert "const int v" in small_src and "long" not in small_src
    assert "const long v1 = static_cast<long>(tid);" in big_src and "* 1073741824L" in big_src


def test_unsupported_op_and_f64_are_codegen_errors():
    t = memref([8], "f32")
    sine = kernel("sine", [("x", t), ("y", t)], [1], [8], f"""
    %v = memref.load %x[%i0] : {t}
    %s = math.sin %v : f32
    memref.store %s, %y[%i0] : {t}""")
    with pytest.raises(CodegenError, match=r"kernel @sine: 'math.sin' is not supported by the Metal \(MSL\) printer"):
        print_msl(parse_kernels(sine))
    d = memref([8], "f64")
    dbl = kernel("dbl", [("x", d), ("y", d)], [1], [8], f"""
    %v = memref.load %x[%i0] : {d}
    memref.store %v, %y[%i0] : {d}""")
    with pytest.raises(CodegenError, match=r"kernel @dbl: argument #0: Metal has no 64-bit floating point"):
        print_msl(parse_kernels(dbl))


def test_artifact_carries_source_and_signatures():
    kernels = metal_kernels("vae2d_block", "bf16")
    art = msl_artifact(kernels)
    assert (art.target, art.kind) == ("metal", "msl")
    assert art.data.decode("ascii").count("kernel void ") == len(art.signatures) >= 3
    sig = art.signatures[0]
    assert sig.name == "fused_0" and any(a.dtype == "bfloat16" for a in sig.args)


# -- stages and packaging ---------------------------------------------------------------------------
def test_metal_stages_print_msl_and_skip_metallib_without_xcrun():
    assert stage_names("metal") == ("fx", "graph", "graph-opt", "fused", "kernel", "msl", "metallib")
    assert targets.get("metal").default_stage == "msl"
    mod = load_example_module("mlp")
    model, args = mod.example()
    (gm,) = capture(model, args, training=False).forward
    outputs = run_stages(gm, "metal")
    assert "llvm" not in outputs and "kernel void fused_0(" in outputs["msl"].text
    if xcrun_path() is None:
        assert outputs["metallib"].data is None and "skipped" in outputs["metallib"].text
        assert "xcrun" in outputs["metallib"].text
        with pytest.raises(ToolchainMissing, match="Apple's Metal toolchain"):
            run_stages(gm, "metal", upto="metallib")
    else:
        assert outputs["metallib"].data


@pytest.mark.skipif(xcrun_path() is not None, reason="this host has xcrun")
def test_metallib_without_xcrun_is_a_clear_error():
    with pytest.raises(ToolchainMissing, match=r"xcrun metal / xcrun metallib"):
        build_metallib("kernel void k() {}")


@needs_xcrun
def test_xcrun_builds_a_metallib():
    data = build_metallib(print_msl(metal_kernels("vae2d_block", "bf16")).source)
    assert data[:4] == b"MTLB"


# -- Apple GPU ----------------------------------------------------------------------------------------
@needs_mps
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_kernels_run_on_mps(dtype):
    from tessera.runtime import mps

    kernels = metal_kernels("vae2d_block", dtype)
    module = mps.load(msl_artifact(kernels), torch.device("mps"))
    gen = torch.Generator().manual_seed(0)
    for fn in kernels.body.block.ops:
        types = [a.type for a in fn.body.block.args]
        k = module.kernel(fn.sym_name.data)
        n_in = len(types) - len(k.signature.outputs)
        inputs = [random_input(t, gen) for t in types[:n_in]]
        outs = [allocate_for(t) for t in types[n_in:]]
        on_gpu = [x.to("mps") for x in inputs] + [o.to("mps") for o in outs]
        k(*on_gpu)
        torch.mps.synchronize()
        for got, want in zip(on_gpu[n_in:], run_kernel(fn, inputs)):
            tol = TOL[want.dtype]
            torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol * max(1.0, float(want.float().abs().max())))


# -- kernels that take their sizes at run time -------------------------------------------------------
def dynamic_program(name: str, dtype: str = "f32"):
    """A graph of ``test_dynamic_kernels`` (``?`` dims) in ``dtype`` and its metal ``kernel`` stage."""
    text, shapes = DYNAMIC_CASES[name]
    if dtype != "f32":
        text = text.replace("f32", dtype)
    module = parse_module(text)
    return module, lower_kernels(fuse_kernels(module, CompileOptions("metal")), "metal"), shapes


def dynamic_inputs(module, shape, seed: int, dtype: torch.dtype) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    types = list(next(iter(module.body.block.ops)).function_type.inputs.data)
    return [in_layout(torch.randn([n if n >= 0 else shape[d] for d, n in enumerate(t.get_shape())], generator=gen)
                      .to(dtype), t) for t in types]


@needs_gxx
def test_dynamic_kernels_print_msl_that_compiles_strictly(tmp_path):
    """Every dynamic graph, in f32/f16/bf16: each kernel takes its dims buffer after its
    tensors, in the order of ``dim_slots``, and the whole file passes the strict check."""
    units = []
    for name in sorted(DYNAMIC_CASES):
        for dtype in DTYPES:
            module = print_msl(dynamic_program(name, dtype)[1].kernels)
            for k in module.kernels:
                assert k.signature.dynamic and k.dims_buffer == len(k.signature.args), k.name
                assert f"constant long* tsr_dims [[buffer({k.dims_buffer})]]," in module.source
            assert "const long tsr_d" in module.source and "-1L" not in module.source
            assert not BARE.search(module.source), BARE.search(module.source)
            units.append(in_namespace(f"{name}_{dtype}", module.source))
    proc = compile_cpp('#include "metal_stub.h"\n' + "".join(units), tmp_path, "-fsyntax-only", *STRICT)
    assert proc.returncode == 0, proc.stderr[:4000]


@needs_gxx
@pytest.mark.parametrize("name,dtype", [(n, "f32") for n in sorted(DYNAMIC_CASES)]
                         + [("pad_upsample", "f16"), ("interleave", "bf16"), ("relayout", "bf16")])
def test_dynamic_kernels_run_at_every_size(name, dtype, tmp_path):
    """One MSL compile per graph; its host program launches the C++ of the printed kernels
    (dims as ``MpsKernel`` passes them: a list after the tensors) at three sizes, and
    matches the graph's reference interpreter: run-time sizes, strides and grids."""
    module, program, shapes = dynamic_program(name, dtype)
    binaries = CppKernels({name: program.kernels}, tmp_path)
    host = build_host_program(program.host, binaries.module(name))
    tol = TOL[DTYPES[dtype]]
    for k, shape in enumerate(shapes):
        xs = dynamic_inputs(module, shape, k, DTYPES[dtype])
        for got, want in zip(host(*xs), interpret(module, *xs), strict=True):
            assert got.shape == want.shape, (name, shape)
            scale = max(1.0, float(want.float().abs().max()))
            torch.testing.assert_close(got, want, rtol=tol, atol=tol * scale, msg=lambda m: f"{name} {shape}: {m}")


def _dynamic_special_kernels() -> str:
    x, y = "memref<?x?xf16, strided<[?, 1]>>", "memref<?x?xf16>"
    v = "memref<?xf32>"
    n = MAX_BUFFERS - 1  # inputs: with the output, Metal's 31 buffers; the dims buffer is one more
    many = [f"%x{j}: {v}" for j in range(n)] + [f"%acc: {v}"]
    loads = "\n".join(f"    %l{j} = memref.load %x{j}[%i] : {v}" for j in range(n))
    sums = "\n".join(["    %s1 = arith.addf %l0, %l1 : f32"]
                     + [f"    %s{j} = arith.addf %s{j - 1}, %l{j} : f32" for j in range(2, n)])
    return f"""
func.func @tiles(%x: {x}, %y: {y}) attributes {{tsr.kernel, tsr.outputs = array<i64: 1>}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %half = arith.constant 5.000000e-01 : f16
  %n = memref.dim %y, %c0 : {y}
  %w = memref.dim %y, %c1 : {y}
  %a = arith.addi %w, %c7 : index
  %t = arith.divui %a, %c8 : index
  "scf.parallel"(%c0, %c0, %n, %t, %c1, %c1) <{{operandSegmentSizes = array<i32: 2, 2, 2, 0>}}> ({{
  ^bb0(%i: index, %j: index):
    %base = arith.muli %j, %c8 : index
    scf.for %k = %c0 to %c8 step %c1 {{
      %col = arith.addi %base, %k : index
      %inside = arith.cmpi slt, %col, %w : index
      scf.if %inside {{
        %v = memref.load %x[%i, %col] : {x}
        %m = arith.mulf %v, %half : f16
        %r = arith.addf %m, %v : f16
        memref.store %r, %y[%i, %col] : {y}
      }}
    }}
    scf.reduce
  }}) : (index, index, index, index, index, index) -> ()
  func.return
}}
func.func @many_dynamic({", ".join(many)}) attributes {{tsr.kernel, tsr.outputs = array<i64: {n}>}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %acc, %c0 : {v}
  "scf.parallel"(%c0, %n, %c1) <{{operandSegmentSizes = array<i32: 1, 1, 1, 0>}}> ({{
  ^bb0(%i: index):
{loads}
{sums}
    memref.store %s{n - 1}, %acc[%i] : {v}
    scf.reduce
  }}) : (index, index, index) -> ()
  func.return
}}"""


@needs_gxx
def test_dynamic_tiles_strides_and_argument_buffer_run(tmp_path):
    """A grid of ``ceil(w / 8)`` tiles over a run-time width (its ``memref.dim`` and tile
    math left to the dims buffer, the width still read in the body), a run-time row
    stride, half arithmetic; and a dynamic kernel whose dims buffer tips it past
    Metal's 31 buffers (argument buffer at 0, dims at 1)."""
    kernels = parse_kernels(_dynamic_special_kernels())
    module = print_msl(kernels)
    tiles, many = module.kernels
    assert tiles.signature.grid == ((1, 0), (1, 1, 8)) and tiles.dims_buffer == 2
    assert many.argument_buffer and many.dims_buffer == 1 and len(many.params) == MAX_BUFFERS
    text = module.source.split("kernel void many_dynamic")[0]
    # dims: [x.size(0), x.size(1), x.stride(0), y.size(0), y.size(1), y.stride(0)]; x's sizes are never read
    assert "tsr_dims[0]" not in text and "tsr_dims[1]" not in text
    assert "const long tsr_d4 = tsr_dims[4];  // size 1 of y" in text
    assert "const long tsr_g1 = (tsr_d4 + 7L) / 8L;" in text and " = 7L;" not in text  # the IR's tile math: not printed
    assert "if (static_cast<long>(tid) >= tsr_d3 * tsr_g1) return;" in text
    assert "rest % static_cast<uint>(tsr_g1)" in text
    assert re.search(r"x\[v\d+ \* tsr_d2 \+ v\d+\]", text) and re.search(r"y\[v\d+ \* tsr_d5 \+ v\d+\] = ", text)
    assert "constant many_dynamic_args& args [[buffer(0)]],\n    constant long* tsr_dims [[buffer(1)]]," in module.source
    proc = compile_cpp('#include "metal_stub.h"\n' + module.source, tmp_path, "-fsyntax-only", *STRICT)
    assert proc.returncode == 0, proc.stderr[:4000]

    binaries = CppKernels({"dyn": kernels}, tmp_path)
    for n, w in ((3, 13), (2, 16), (1, 5)):
        x = torch.randn(n, 2 * w).half()[:, :w]  # row stride 2w: a run-time stride
        y = torch.full((n, w), float("nan"), dtype=torch.half)
        binaries.kernel("dyn", "tiles")(x, y)
        assert torch.equal(y, x * 0.5 + x), (n, w)
        xs = [torch.randn(n * w) for _ in range(MAX_BUFFERS - 1)]
        acc = torch.empty(n * w)
        binaries.kernel("dyn", "many_dynamic")(*xs, acc)
        expect = xs[0].clone()
        for t in xs[1:]:
            expect = expect + t
        torch.testing.assert_close(acc, expect, rtol=0, atol=0)


def test_mps_kernel_passes_dims_as_a_list():
    """What ``torch.mps`` binds after the tensors of a dynamic kernel: one list of ints
    (setBytes into ``constant long*``), in ``dim_slots`` order; a grid past 2^32 - 1
    threads is refused before it reaches Metal."""
    from tessera.runtime import mps

    kernels = parse_kernels(_dynamic_special_kernels())
    sig = print_msl(kernels).kernels[0].signature
    calls = []
    k = MpsKernel(sig, torch.device("cpu"), lambda args, chunks, total: calls.append((args, total)),
                  RuntimeOptions(cache_dir=None), takes_tensors=True)
    x, y = torch.empty(3, 26).half()[:, :13], torch.empty(3, 13).half()
    k(x, y)
    ((args, total),) = calls
    assert args[:2] == [x, y] and args[2] == sig.dims_of([x, y]) == [3, 13, 26, 3, 13, 13] and total == 3 * 2
    with pytest.raises(SignatureMismatch, match="exceeds Metal's 32-bit"):
        mps._launch(lambda *a, **kw: None, "tiles", [x, y], 2**32)
