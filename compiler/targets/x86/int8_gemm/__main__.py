"""Print an int8 GEMM kernel's LLVM IR or assembly, for any isa on any host.

    python -m tessera.compiler.targets.x86.int8_gemm --isa avxvnni --emit asm | filecheck x.mlir
    python -m tessera.compiler.targets.x86.int8_gemm --isa avx2 --shape 1x4096x4096 --signed --epilogue scale_bias
"""

from __future__ import annotations

import argparse
import sys

from tessera.compiler.targets.x86.int8_gemm.build import INT8_GEMM
from tessera.compiler.targets.x86.int8_gemm.errors import Int8GemmError, InvalidSpec
from tessera.compiler.targets.x86.int8_gemm.spec import EPILOGUES, ISAS, Int8GemmSpec


def _shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise InvalidSpec(f"--shape wants MxNxK (e.g. 64x4096x4096), got {text!r}") from None
    return m, n, k


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tessera.compiler.targets.x86.int8_gemm", description=__doc__.splitlines()[0])
    p.add_argument("--isa", choices=ISAS, default=None, help="instruction path (default: this host's fastest)")
    p.add_argument("--emit", choices=INT8_GEMM.EMITS, default="asm")
    p.add_argument("--shape", default="37x61x129", help="MxNxK (default exercises every tail: 37x61x129)")
    p.add_argument("--signed", action="store_true", help="s8 A (default u8 A)")
    p.add_argument("--epilogue", choices=EPILOGUES, default="s32")
    p.add_argument("--features", default=None, help="LLVM feature string (default: the isa's own)")
    p.add_argument("--cpu", default=None, help="LLVM CPU name to tune for (default: generic)")
    args = p.parse_args(argv)

    def spec() -> Int8GemmSpec:
        if args.isa is None:
            from tessera.compiler.targets.x86.int8_gemm.isa import select_isa

            args.isa = select_isa()
        m, n, k = _shape(args.shape)
        return Int8GemmSpec(m, n, k, a_signed=args.signed, isa=args.isa, epilogue=args.epilogue)

    return INT8_GEMM.print_emitted(spec, args.emit, args.features, args.cpu, Int8GemmError)

if __name__ == "__main__":
    sys.exit(main())
