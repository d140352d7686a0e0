"""``compilerctl`` as a user runs it: a subprocess, exit status, stdout and
stderr. Every user error is a one-line diagnostic (``file:line:col: error:``)
with exit status 1 and never a Python traceback."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN

COMPILERCTL = str(VENV_BIN / "compilerctl")


def run(*args: str, stdin: str | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [COMPILERCTL, *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=180
    )


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    for n in needles:
        assert n in proc.stderr, f"{n!r} not in stderr:\n{proc.stderr}"


@pytest.fixture(scope="module")
def video_ir() -> str:
    proc = run("import", "examples/video_vae_block.py")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_import_prints_ir_with_layouts(video_ir):
    assert video_ir.startswith("// forward\n")
    assert "func.func @forward" in video_ir
    for op in ("tsr.conv", "tsr.pad", "tsr.silu", "tsr.upsample", "tsr.var"):
        assert op in video_ir, f"{op} missing from the imported IR"
    assert "tsr.aten_call" not in video_ir
    # Every tensor type carries its layout: each `tensor<` has a `#tsr.layout<` before its `>`.
    types = re.findall(r"tensor<[^<>]*(?:<[^<>]*>[^<>]*)*>", video_ir)
    assert len(types) > 20
    bare = [t for t in types if "#tsr.layout<" not in t]
    assert not bare, f"tensor types without layout: {bare[:5]}"
    assert video_ir.count("tensor<") == len(types)
    # The causal time pad: two frames in front, none behind; H and W by one on each side.
    assert "low = array<i64: 0, 0, 2, 1, 1>, high = array<i64: 0, 0, 0, 1, 1>" in video_ir


def test_imported_ir_parses_back_through_opt(video_ir):
    proc = run("opt", "-", "-p", "cse", stdin=video_ir)
    assert proc.returncode == 0, proc.stderr
    assert "func.func @forward" in proc.stdout and "tsr.conv" in proc.stdout
    # cse merged nothing that matters for meaning but the result is stable: a second round-trip is identical.
    again = run("opt", "-", "-p", "cse", stdin=proc.stdout)
    assert again.returncode == 0, again.stderr
    assert again.stdout == proc.stdout


def test_import_training_prints_forward_and_backward():
    proc = run("import", "examples/mlp.py", "--training")
    assert proc.returncode == 0, proc.stderr
    assert "// forward\n" in proc.stdout and "// backward\n" in proc.stdout
    assert "func.func @backward" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr  # no torch warning reaches the user


def test_dump_all_stages_writes_files(tmp_path):
    out = tmp_path / "dump"
    proc = run("dump", "examples/resnet_block.py", "--target", "x86", "--all-stages", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert {"forward.fx.py", "forward.graph.mlir", "forward.graph-opt.mlir", "forward.fused.mlir",
            "forward.kernel.mlir", "forward.llvm.ll", "forward.asm.s", "forward.obj.o"} <= set(names), names
    assert (out / "forward.obj.o").read_bytes().startswith(b"\x7fELF")
    assert all(n.startswith("forward.") for n in names), names  # inference: no backward graph
    fx = (out / "forward.fx.py").read_text()
    assert "aten.convolution" in fx
    graph = (out / "forward.graph.mlir").read_text()
    opt = (out / "forward.graph-opt.mlir").read_text()
    for text in (graph, opt):
        assert "func.func @forward" in text and "tsr.conv" in text
    assert "compilerctl: wrote " in proc.stderr and "forward.fx.py" in proc.stderr
    # graph-opt output is valid IR for `opt` again.
    again = run("opt", str(out / "forward.graph-opt.mlir"), "-p", "cse,dce")
    assert again.returncode == 0, again.stderr


def test_dump_stage_a_target_lacks_is_a_clear_error():
    """Metal has no llvm stage (MSL is printed from the kernel IR)."""
    proc = run("dump", "examples/resnet_block.py", "--target", "metal", "--stage", "llvm")
    assert_user_error(proc, "unknown stage 'llvm' for target metal",
                      "stages: fx, graph, graph-opt, fused, kernel, msl, metallib")
    assert proc.stdout == ""


def test_dump_of_graph_ir_runs_from_the_graph_stage(tmp_path):
    """An .mlir file is dumped from the stage after ``graph``: the passes, fusion and
    lowering of tsr IR; its parse errors are located diagnostics."""
    proc = run("dump", "test/lit/codegen/dynamic-lowering.mlir", "--target", "x86", "--stage", "graph-opt")
    assert proc.returncode == 0, proc.stderr
    assert "stage graph-opt (x86)" in proc.stdout and "tsr.polyphase_interleave" in proc.stdout
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = tsr.bogus %x : (tensor<4xf32>) -> "
                   "tensor<4xf32>\n  func.return %y : tensor<4xf32>\n}\n")
    assert_user_error(run("dump", str(bad), "--stage", "kernel"), "bad.mlir:2:", "tsr.bogus")


def test_dump_unknown_stage():
    proc = run("dump", "examples/resnet_block.py", "--stage", "ptx", "--target", "x86")
    assert_user_error(proc, "unknown stage 'ptx' for target x86")


def import_model_file(tmp_path, name: str, text: str):
    """``compilerctl import`` on a model file of ``text``: (its path, the process)."""
    model = tmp_path / name
    model.write_text(text)
    return model, run("import", str(model))


def test_model_without_example(tmp_path):
    model, proc = import_model_file(tmp_path, "noexample.py", "import torch\n\nX = 1\n")
    assert_user_error(proc, f"{model}:1:1: error:", "defines no example()")


def test_model_with_syntax_error(tmp_path):
    model, proc = import_model_file(tmp_path, "syntax.py", "import torch\n\n\ndef example(:\n    return None\n")
    assert_user_error(proc, "syntax error")
    assert re.search(re.escape(str(model)) + r":4:\d+: error: syntax error", proc.stderr), proc.stderr


def test_model_whose_example_raises(tmp_path):
    model, proc = import_model_file(tmp_path, "raises.py",
                                    "import torch\n\n\ndef example():\n    raise RuntimeError('no weights here')\n")
    assert_user_error(proc, f"{model}:5:", "example() raised RuntimeError: no weights here")


def test_model_returning_wrong_thing(tmp_path):
    model, proc = import_model_file(tmp_path, "wrong.py", "def example():\n    return 42\n")
    assert_user_error(proc, str(model), "must return (module_or_fn, args)")


def test_missing_model_file(tmp_path):
    missing = tmp_path / "nope.py"
    proc = run("import", str(missing))
    assert_user_error(proc, f"no such model file '{missing}'")


def test_unparsable_ir_has_location(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = tsr.exp %x : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  %z = tsr.bogus %y\n"
        "  func.return %z : tensor<4xf32>\n"
        "}\n"
    )
    proc = run("opt", str(bad), "-p", "cse")
    assert_user_error(proc)
    assert re.search(re.escape(str(bad)) + r":3:\d+: error: .*tsr\.bogus", proc.stderr), proc.stderr


def test_invalid_layout_is_a_located_error(tmp_path):
    bad = tmp_path / "layout.mlir"
    bad.write_text(
        "func.func @forward(%x: tensor<4x4xf32, #tsr.layout<[0, 0]>>) -> tensor<4x4xf32> {\n"
        "  func.return %x : tensor<4x4xf32>\n"
        "}\n"
    )
    proc = run("opt", str(bad))
    assert_user_error(proc, "not a permutation")
    assert re.search(re.escape(str(bad)) + r":1:\d+: error:", proc.stderr), proc.stderr


def test_unknown_pass():
    proc = run("opt", "-", "-p", "cse,no-such-pass", stdin="builtin.module {}\n")
    assert_user_error(proc, "unknown pass 'no-such-pass'", "registered passes:", "cse, dce")


def test_passes_and_targets_list():
    from tessera.compiler import targets

    proc = run("passes", "--pipeline", "x86")
    assert proc.returncode == 0 and proc.stdout.strip() == ",".join(targets.get("x86").graph_pipeline()), (proc.stdout, proc.stderr)


@pytest.mark.parametrize("freezing", [False, True])
@pytest.mark.parametrize("name", ["mobilenet_block", "int8_linear", "video_vae_block"])
def test_dump_shows_every_kernel_the_program_launches(name, freezing, monkeypatch):
    """What ``dump`` shows is what runs: each kernel a compiled model launches (fused
    kernels, tessera's conv kernels, the int8 GEMM and its packing) is a symbol of the
    ``asm`` stage of the same pipeline (``--freezing`` as the option)."""
    import torch

    from conftest import example, record_launches

    model, args = example(name)
    launched = record_launches(monkeypatch)
    with torch.no_grad():
        torch.compile(model, backend="tessera", options={"strict": True, "freezing": freezing})(*args)
    torch._dynamo.reset()
    assert launched, f"{name}: nothing was launched"
    proc = run("dump", f"examples/{name}.py", "--stage", "asm", *(["--freezing"] if freezing else []))
    assert proc.returncode == 0, proc.stderr
    defined = set(re.findall(r"^([A-Za-z_][\w.]*):", proc.stdout, re.M))
    assert not set(launched) - defined, f"launched but not in the dump: {sorted(set(launched) - defined)}"
