"""The exact int8 GEMM (compiler/targets/x86/int8_gemm): results equal an int64
torch reference bit for bit, on random and adversarial inputs, for every
instruction path this CPU runs; paths it lacks are checked as assembly and
skipped at run time."""

from __future__ import annotations

import re

import pytest
import torch

from tessera.compiler.targets.x86.int8_gemm import (
    ISAS,
    Int8GemmSpec,
    InvalidSpec,
    IsaUnavailable,
    OperandMismatch,
    PackedB,
    UnknownIsa,
    build_int8_gemm,
    can_run,
    int8_gemm_assembly,
    int8_mm,
    load_int8_gemm,
    pack_b,
    pack_b_kernel,
    select_isa,
)
from tessera.compiler.targets.x86.int8_gemm.isa import cpuinfo_flags, get_isa
from tessera.runtime.device import Device

GEN = torch.Generator().manual_seed(0)
FLAGS = cpuinfo_flags()
_INSTR = {"avx512vnni": "avx512_vnni", "avxvnni": "avx_vnni", "avx2": "avx2"}


def runnable(isa: str) -> str:
    """``isa``, skipping the test where /proc/cpuinfo lacks the path's flags."""
    if not can_run(isa, FLAGS):
        pytest.skip(f"this CPU has no {_INSTR[isa]} (/proc/cpuinfo flags): {isa} is checked as assembly only")
    return isa


def rand_a(m: int, k: int, signed: bool) -> torch.Tensor:
    if signed:
        return torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=GEN)
    return torch.randint(0, 256, (m, k), dtype=torch.uint8, generator=GEN)


def rand_b(k: int, n: int) -> torch.Tensor:
    return torch.randint(-128, 128, (k, n), dtype=torch.int8, generator=GEN)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The exact product in int64 (then int32: every case here fits)."""
    exact = a.to(torch.int64) @ b.to(torch.int64)
    assert exact.abs().max() < 2**31
    return exact.to(torch.int32)


def scaled_reference(acc: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    y = acc.to(torch.float32) * sa[:, None] * sb[None, :]
    return y + bias if bias is not None else y


# M, N, K: every tail (M % mr, N % nr, K % 4), vectors, a single element.
SHAPES = [(37, 61, 129), (1, 1, 1), (1, 300, 257), (64, 1, 33), (6, 64, 8), (13, 70, 37), (50, 200, 300), (7, 129, 1030)]


@pytest.mark.parametrize("signed", [False, True], ids=["u8s8", "s8s8"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("isa", ISAS)
def test_exact_random(isa, shape, signed):
    runnable(isa)
    m, n, k = shape
    a, b = rand_a(m, k, signed), rand_b(k, n)
    assert a.any() and b.any()
    out = int8_mm(a, b, isa=isa)
    assert out.dtype == torch.int32
    torch.testing.assert_close(out, reference(a, b), rtol=0, atol=0)


ADVERSARIAL = {
    # vpmaddubsw would saturate every pair: 255*127*2 = 64770 > 32767.
    "u8max_x_s8max": (torch.uint8, 255, 127, (9, 35, 1027)),
    "u8max_x_s8min": (torch.uint8, 255, -128, (9, 35, 1027)),
    "s8min_x_s8min": (torch.int8, -128, -128, (7, 17, 515)),
    "s8min_x_s8max": (torch.int8, -128, 127, (7, 17, 515)),
    "s8max_x_s8min": (torch.int8, 127, -128, (3, 5, 6)),
    # the largest K whose sum still fits int32: 255 * -128 * 65536 = -2139095040
    "u8max_x_s8min_k64k": (torch.uint8, 255, -128, (2, 3, 65536)),
    "s8min_x_s8min_k64k": (torch.int8, -128, -128, (2, 3, 65536)),
}


@pytest.mark.parametrize("case", list(ADVERSARIAL))
@pytest.mark.parametrize("isa", ISAS)
def test_exact_adversarial(isa, case):
    runnable(isa)
    dtype, av, bv, (m, n, k) = ADVERSARIAL[case]
    a = torch.full((m, k), av, dtype=dtype)
    b = torch.full((k, n), bv, dtype=torch.int8)
    out = int8_mm(a, b, isa=isa)
    assert int(out[0, 0]) == av * bv * k
    torch.testing.assert_close(out, reference(a, b), rtol=0, atol=0)


@pytest.mark.parametrize("isa", ISAS)
def test_exact_mixed_extremes(isa):
    """Extremes and zeros interleaved in every K-group position (and the K % 4 tail)."""
    runnable(isa)
    for signed in (False, True):
        lo, hi = (-128, 127) if signed else (0, 255)
        vals = torch.tensor([lo, hi, 0, hi, lo, 1, hi])
        a = vals[torch.randint(0, len(vals), (11, 203), generator=GEN)].to(torch.int8 if signed else torch.uint8)
        b = torch.tensor([-128, 127, 0, -1])[torch.randint(0, 4, (203, 77), generator=GEN)].to(torch.int8)
        torch.testing.assert_close(int8_mm(a, b, isa=isa), reference(a, b), rtol=0, atol=0)


@pytest.mark.parametrize("bias", [False, True], ids=["scale", "scale_bias"])
@pytest.mark.parametrize("signed", [False, True], ids=["u8s8", "s8s8"])
@pytest.mark.parametrize("isa", ISAS)
def test_fused_epilogue(isa, signed, bias):
    runnable(isa)
    for m, n, k in [(37, 61, 129), (1, 80, 64), (20, 1, 5)]:
        a, b = rand_a(m, k, signed), rand_b(k, n)
        sa = torch.rand(m, generator=GEN) * 0.1 + 0.01
        sb = torch.rand(n, generator=GEN) * 0.01 + 0.001
        bv = torch.randn(n, generator=GEN) if bias else None
        y = int8_mm(a, b, a_scale=sa, b_scale=sb, bias=bv, isa=isa)
        assert y.dtype == torch.float32
        torch.testing.assert_close(y, scaled_reference(reference(a, b), sa, sb, bv), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("isa", ISAS)
def test_matches_torch_int_mm(isa):
    runnable(isa)
    for signed in (False, True):
        a, b = rand_a(32, 64, signed), rand_b(64, 24)
        torch.testing.assert_close(int8_mm(a, b, isa=isa), torch._int_mm(a, b), rtol=0, atol=0)


@pytest.mark.parametrize("isa", ISAS)
def test_prepacked_and_thread_splits(isa):
    """A weight packed once at compile time; any split of the grid gives the same result."""
    runnable(isa)
    m, n, k = 100, 150, 70
    a, b = rand_a(m, k, False), rand_b(k, n)
    packed = pack_b(b, isa)
    ref = reference(a, b)
    torch.testing.assert_close(int8_mm(a, packed), ref, rtol=0, atol=0)
    kern = load_int8_gemm(Int8GemmSpec(m, n, k, isa=isa))
    for chunks in (1, 2, 3, 7, 1000):
        out = torch.full((m, n), -1, dtype=torch.int32)
        kern.launch(a, packed.data, out, chunks=chunks)
        torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_strided_a_is_accepted():
    isa = runnable(select_isa(FLAGS))
    a = rand_a(40, 33, False).t()  # [33, 40], not contiguous
    b = rand_b(40, 9)
    torch.testing.assert_close(int8_mm(a, b, isa=isa), reference(a, b), rtol=0, atol=0)


@pytest.mark.parametrize("signed", [False, True], ids=["u8s8", "s8s8"])
@pytest.mark.parametrize("isa", ISAS)
def test_pack_kernel_matches_torch_packing(isa, signed):
    runnable(isa)
    for k, n in [(1, 1), (37, 61), (64, 128), (130, 100), (8, 16)]:
        b = rand_b(k, n)
        want = pack_b(b, isa, signed)
        got = pack_b_kernel(b, isa, signed)
        assert got.data.shape == want.data.shape
        assert torch.equal(got.data, want.data)


def test_packing_layout():
    b = rand_b(37, 61)
    p = pack_b(b, "avx2")
    nr = get_isa("avx2").nr
    assert p.data.shape == (-(-61 // nr), 10, nr, 4)
    for g, j, c in [(0, 0, 0), (3, 2, 5), (9, 0, 60), (8, 3, 17)]:
        assert p.data[c // nr, g, c % nr, j] == b[4 * g + j, c]
    assert not p.data[:, 9, :, 1:].any()  # K = 37: rows 37..39 are padding
    flipped = pack_b(b, "avx512vnni", a_signed=True)
    assert flipped.data[0, 0, 0, 0] == ((int(b[0, 0]) + 128) & 0xFF) - 256 * (int(b[0, 0]) >= 0)
    assert not pack_b(b, "avx2", a_signed=True).layout.flipped  # AVX2 widens s8 A: no shift


# -- assembly, on any host ----------------------------------------------------------------
def kloop_body(asm: str) -> str:
    """The instructions of the K loop: from its label to its backward branch."""
    label = re.search(r"^(\.LBB\d+_\d+):.*# %kloop", asm, re.M)
    assert label, "no K loop in the assembly"
    start = label.end()
    back = re.search(rf"^\s+j\w+\s+{re.escape(label.group(1))}\s*$", asm[start:], re.M)
    assert back, "the K loop has no backward branch"
    body = asm[start:start + back.start()]
    assert not re.search(r"^\.LBB", body, re.M), "the K loop is not one basic block"
    return body


INNER = {
    "avx512vnni": r"vpdpbusd\s+%zmm\d+, %zmm\d+, %zmm\d+",
    "avxvnni": r"\{vex\}\s+vpdpbusd\s+%ymm\d+, %ymm\d+, %ymm\d+",
    "avx2": r"vpmaddwd\s+%ymm\d+, %ymm\d+, %ymm\d+",
}


@pytest.mark.parametrize("signed", [False, True], ids=["u8s8", "s8s8"])
@pytest.mark.parametrize("isa", ISAS)
def test_inner_loop_instruction(isa, signed):
    asm = int8_gemm_assembly(Int8GemmSpec(64, 256, 512, a_signed=signed, isa=isa))
    body = kloop_body(asm)
    path = get_isa(isa)
    # one multiply-add per accumulator and K-group, 4 K-groups per iteration
    assert len(re.findall(INNER[isa], body)) == 4 * path.mr * path.accumulators_per_row()
    assert "vpmaddubsw" not in asm and "vpdpbusds" not in asm  # the saturating forms
    if isa != "avx512vnni":
        assert "zmm" not in asm
    if isa == "avx2":
        assert "vpdpbusd" not in asm
    assert "(%rsp)" not in body, "the K loop spills"


# -- host selection and errors ------------------------------------------------------------
def test_select_isa_order():
    assert select_isa(["avx2", "avx512f", "avx512_vnni", "avx_vnni"]) == "avx512vnni"
    assert select_isa(["avx2", "avx_vnni"]) == "avxvnni"
    assert select_isa(["+avx2", "+avxvnni"]) == "avxvnni"
    assert select_isa(["avx2", "avx512_vnni"]) == "avx2"  # VNNI without AVX-512F is not usable
    assert select_isa(["sse4_2", "avx", "avx2"]) == "avx2"
    with pytest.raises(IsaUnavailable):
        select_isa(["sse4_2", "avx"])


def test_select_isa_on_this_host():
    # the LLVM view and /proc/cpuinfo agree on this host's best path
    assert select_isa() == select_isa(FLAGS)
    if {"avx512f", "avx512vnni"} <= FLAGS:
        assert select_isa() == "avx512vnni"


def test_errors():
    with pytest.raises(InvalidSpec):
        Int8GemmSpec(0, 4, 4)
    with pytest.raises(InvalidSpec):
        Int8GemmSpec(4, 4, 4, epilogue="relu")
    with pytest.raises(UnknownIsa):
        Int8GemmSpec(4, 4, 4, isa="amx")
    with pytest.raises(IsaUnavailable, match=r"\+avx512vnni"):
        build_int8_gemm(Int8GemmSpec(4, 4, 4, isa="avx512vnni"), features="+avx2,+avx512f")
    a, b = rand_a(4, 8, False), rand_b(8, 5)
    with pytest.raises(OperandMismatch, match="inner sizes"):
        int8_mm(a, rand_b(7, 5))
    with pytest.raises(OperandMismatch, match="uint8 or int8"):
        int8_mm(a.float(), b)
    with pytest.raises(OperandMismatch, match="int8 tensor"):
        int8_mm(a, b.to(torch.uint8))
    with pytest.raises(OperandMismatch, match="go together"):
        int8_mm(a, b, a_scale=torch.ones(4))
    with pytest.raises(OperandMismatch, match="bias needs"):
        int8_mm(a, b, bias=torch.ones(5))
    with pytest.raises(OperandMismatch, match="b_scale"):
        int8_mm(a, b, a_scale=torch.ones(4), b_scale=torch.ones(4))
    host = select_isa(FLAGS)
    with pytest.raises(OperandMismatch, match="packed for"):
        int8_mm(a.to(torch.int8), pack_b(b, host, a_signed=False))  # s8 A needs the s8 packing
    other = next(i for i in ISAS if i != host)
    with pytest.raises(OperandMismatch, match="packed for"):
        int8_mm(a, pack_b(b, host), isa=other)
    assert isinstance(pack_b(b, host), PackedB)


def test_unavailable_isa_is_refused_before_running():
    missing = [i for i in ISAS if not can_run(i)]
    if not missing:
        pytest.skip("this CPU runs every path")
    with pytest.raises(IsaUnavailable):
        int8_mm(rand_a(4, 8, False), rand_b(8, 5), isa=missing[0])


def test_artifact_loads_through_the_runtime():
    isa = runnable(select_isa(FLAGS))
    spec = Int8GemmSpec(5, 7, 9, isa=isa, epilogue="scale_bias")
    art = build_int8_gemm(spec)
    assert set(get_isa(isa).requires) <= set(art.required_features)
    kern = Device("cpu").load(art).kernel(spec.kernel_name)
    a, b = rand_a(5, 9, False), rand_b(9, 7)
    sa, sb, bias = torch.rand(5), torch.rand(7), torch.randn(7)
    out = torch.empty(5, 7)
    kern(a, pack_b(b, isa).data, sa, sb, bias, out)
    torch.testing.assert_close(out, scaled_reference(reference(a, b), sa, sb, bias), rtol=1e-6, atol=1e-6)
