"""``compilerctl translate``: kernel IR files to LLVM IR, assembly, objects, PTX, cubin;
a kernel-stage dump as input; located diagnostics for bad input; the emitter table."""

from __future__ import annotations

import pytest

from kernel_testing import kernel, memref
from tessera.compiler.cli import main
from tessera.compiler.targets.nvptx.ptxas import ptxas_path
from tessera.compiler.translate import KERNELS_MARKER, TranslateError, emits, translate

SCALE = kernel("scale", [("x", memref([4, 8], "f32")), ("y", memref([4, 8], "f32"))], [1], [4, 8], """
    %two = arith.constant 2.0 : f32
    %v = memref.load %x[%i0, %i1] : memref<4x8xf32>
    %r = arith.mulf %v, %two : f32
    memref.store %r, %y[%i0, %i1] : memref<4x8xf32>""")
MODULE = "builtin.module {\n" + SCALE + "\n}\n"


def run(tmp_path, capsys, *argv: str, text: str = MODULE) -> tuple[int, str, str]:
    src = tmp_path / "k.mlir"
    src.write_text(text)
    rc = main(["translate", str(src), *argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("target,emit,expect", [
    ("x86", "llvm", "define void @scale(ptr noalias"),
    ("x86", "asm", "scale:"),
    ("ptx", "llvm", "define ptx_kernel void @scale(ptr addrspace(1) noalias"),
    ("ptx", "ptx", ".visible .entry scale("),
])
def test_text_emits(tmp_path, capsys, target, emit, expect):
    rc, out, err = run(tmp_path, capsys, "--target", target, "--emit", emit)
    assert (rc, err) == (0, "")
    assert expect in out


def test_binary_emits_go_to_a_file(tmp_path, capsys):
    rc, _, err = run(tmp_path, capsys, "--target", "x86", "--emit", "obj", "-o", str(tmp_path / "k.o"))
    assert (rc, err) == (0, "")
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    if ptxas_path():
        rc, _, err = run(tmp_path, capsys, "--target", "ptx", "--emit", "cubin", "--features", "sm_90", "-o", str(tmp_path / "k.cubin"))
        assert (rc, err) == (0, "")
        assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


def test_reads_the_kernels_of_a_kernel_stage_dump(tmp_path, capsys):
    dump = f"// ----- host\nbuiltin.module {{\n}}\n\n{KERNELS_MARKER}\n{MODULE}"
    rc, out, _ = run(tmp_path, capsys, "--target", "ptx", "--emit", "ptx", text=dump)
    assert rc == 0 and ".entry scale(" in out
    # an error in the kernels part points at its line in the whole file
    bad = dump.replace("arith.mulf %v, %two : f32", "arith.mulx %v, %two : f32")
    line = bad.splitlines().index(next(ln for ln in bad.splitlines() if "arith.mulx" in ln)) + 1
    rc, _, err = run(tmp_path, capsys, "--target", "ptx", "--emit", "ptx", text=bad)
    assert rc == 1 and f"k.mlir:{line}:" in err and "error:" in err and "Traceback" not in err


@pytest.mark.parametrize("text,message", [
    ("builtin.module {\n  func.func @k( {\n}\n", "k.mlir:2:"),
    ("builtin.module {\n}\n", "holds no func.func with the 'tsr.kernel' attribute"),
    (MODULE.replace("tsr.outputs = array<i64: 1>", "tsr.outputs = array<i64: 0>"), "k.mlir:3:1: error: kernel @scale: stores to argument #1"),
])
def test_bad_input_is_a_located_diagnostic(tmp_path, capsys, text, message):
    rc, out, err = run(tmp_path, capsys, "--target", "ptx", "--emit", "ptx", text=text)
    assert rc == 1 and out == ""
    assert message in err and "Traceback" not in err


def test_what_a_target_emits_is_its_stages_after_kernel():
    assert {"asm", "llvm", "obj"} <= set(emits("x86")) and {"ptx", "cubin"} <= set(emits("ptx"))
    assert emits("metal") == ("msl", "metallib")
    with pytest.raises(TranslateError, match="target ptx cannot emit 'asm'; it emits: llvm, ptx, cubin"):
        translate(MODULE, "k.mlir", "ptx", "asm")


def test_a_new_stage_is_emittable(monkeypatch):
    """A stage a target declares is what translate can emit: no table of its own."""
    from tessera.compiler import targets
    from tessera.compiler.stage_io import StageOutput

    ptx = targets.get("ptx")
    stages = {**ptx.stages(), "names": lambda prev, opts: StageOutput(
        None, ",".join(op.sym_name.data for op in prev.value[0].kernels.ops), "txt")}
    monkeypatch.setattr(type(ptx), "stages", lambda self: stages)
    assert translate(MODULE, "k.mlir", "ptx", "names") == "scale"
