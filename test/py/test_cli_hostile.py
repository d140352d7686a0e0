"""``compilerctl`` on hostile input (what a fuzzer feeds it): every case is a
located diagnostic and exit status 1, never an internal error or a traceback.
Run in-process (``cli.main``), which is what the executable calls."""

from __future__ import annotations

import pytest

from tessera.compiler.cli import main

from conftest import REPO

GOOD = (REPO / "test/lit/passes/cse.mlir").read_bytes()
KERNEL = (REPO / "test/lit/codegen/ptx-kernel.mlir").read_text()


def user_error(capsys, argv: list[str], *needles: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    for n in needles:
        assert n in err, f"{n!r} not in {err!r}"
    return err


INPUTS = {
    "non_utf8": (b"func.func @f() {\n  \xff\xfe return\n}\n", ":2:3: error: invalid UTF-8 byte 0xff"),
    "nul_first": (b"\x00" + GOOD, ":1:1: error: NUL byte in the input"),
    "nul_inside": (GOOD[:40] + b"\x00" + GOOD[40:], "error: NUL byte in the input"),
    "deep_nesting": (b"builtin.module {" * 5000 + b"}" * 5000, "error: the input nests too deeply to parse"),
    "use_before_def": (b"func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       b"  %a = tsr.add %b, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
                       b"  %b = tsr.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
                       b"  func.return %a : tensor<4xf32>\n}\n", ":2:3: error: 'tsr.add' op operand #0 does not dominate"),
    "self_reference": (b"func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       b"  %a = tsr.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
                       b"  func.return %a : tensor<4xf32>\n}\n", ":2:3: error: 'tsr.add' op operand #0 does not dominate"),
    # xDSL's string regex backtracked exponentially in the rest of the line (hours here).
    "unclosed_string": (b'%0 = "tsr.constant"() {note = "' + b"x" * 60 + b"} : () -> tensor<4xf32>\n",
                        ":1:31: error: End of file reached before closing string literal"),
    # A width whose value range (2**width) xDSL would compute: refused before parsing.
    "huge_bitwidth": (b'%0 = "tsr.constant"() {value = array<i4294967296: 1, 2>} : () -> tensor<2xf32>\n',
                      ":1:38: error: integer bitwidth is limited to 16777215 bits"),
    # A splat xDSL expands to 10**11 elements: MemoryError.
    "huge_splat": (b'%0 = "tsr.constant"() {value = dense<1.0> : tensor<100000000000xf32>} : () -> tensor<100000000000xf32>\n',
                   ": error: the input is too large to parse"),
}


@pytest.mark.parametrize("name", INPUTS)
def test_hostile_input_is_a_located_diagnostic(name, tmp_path, capsys):
    data, needle = INPUTS[name]
    path = tmp_path / f"{name}.mlir"
    path.write_bytes(data)
    user_error(capsys, ["opt", str(path), "-p", "cse"], f"{path}{needle}" if needle.startswith(":") else needle)


def test_a_byte_order_mark_and_an_empty_file_are_accepted(tmp_path, capsys):
    bom, empty = tmp_path / "bom.mlir", tmp_path / "empty.mlir"
    bom.write_bytes(b"\xef\xbb\xbf" + GOOD)
    empty.write_bytes(b"")
    assert main(["opt", str(bom), "-p", "cse"]) == 0
    assert main(["opt", str(empty), "-p", "cse"]) == 0
    assert "builtin.module" in capsys.readouterr().out


def test_a_huge_dense_literal_parses(tmp_path, capsys):
    path = tmp_path / "huge.mlir"
    n = 200_000
    path.write_text(f'%0 = "tsr.constant"() {{value = dense<[{",".join(["1.5"] * n)}]> : tensor<{n}xf32>}}'
                    f" : () -> tensor<{n}xf32>\n")
    assert main(["opt", str(path), "-p", "cse", "-o", str(tmp_path / "out.mlir")]) == 0


def test_output_paths(tmp_path, capsys):
    good = tmp_path / "good.mlir"
    good.write_bytes(GOOD)
    a_file = tmp_path / "file"
    a_file.write_text("")
    user_error(capsys, ["opt", str(good), "-p", "cse", "-o", str(tmp_path)], f"{tmp_path}: error: cannot write output")
    user_error(capsys, ["opt", str(good), "-p", "cse", "-o", str(tmp_path / "missing" / "x.mlir")],
               "error: cannot write output: No such file or directory")
    user_error(capsys, ["dump", str(REPO / "examples/mlp.py"), "--stage", "graph", "-o", str(a_file)],
               f"{a_file}: error: cannot create the output folder")
    user_error(capsys, ["opt", str(tmp_path), "-p", "cse"], f"{tmp_path}: error: cannot read input")
    user_error(capsys, ["opt", str(tmp_path / "missing.mlir"), "-p", "cse"],
               f"{tmp_path / 'missing.mlir'}: error: cannot read input: No such file or directory")
    user_error(capsys, ["dump", str(REPO / "examples/mlp.py"), "--all-stages", "-o", str(a_file)],
               f"{a_file}: error: cannot create the output folder")


@pytest.mark.parametrize("target, features, needle", [
    ("ptx", "sm_999", "not a GPU LLVM knows"),
    ("ptx", "sm_abc", "expected sm_75 or newer"),
    ("ptx", "sm_7", "expected sm_75 or newer"),
    ("x86", "+avx9000", "'avx9000' is not an x86 feature LLVM knows"),
    ("x86", "avx2", "needs a leading '+' or '-'"),
])
def test_translate_refuses_unknown_targets(target, features, needle, tmp_path, capsys):
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    user_error(capsys, ["translate", str(path), "--target", target, "--emit", "llvm", "--features", features], needle)


@pytest.mark.parametrize("target", ["x86", "ptx"])
def test_translate_refuses_a_grid_past_its_buffers(target, tmp_path, capsys):
    path = tmp_path / "oob.mlir"
    path.write_text(KERNEL.replace("%c8 = arith.constant 8 : index", "%c8 = arith.constant 9 : index"))
    user_error(capsys, ["translate", str(path), "--target", target, "--emit", "llvm"],
               "'memref.load' index #1 runs from 0 to 8 over the grid, past the memref's dim of 8")
    assert main(["translate", str(REPO / "test/lit/codegen/ptx-kernel.mlir"), "--target", target, "--emit", "llvm"]) == 0
