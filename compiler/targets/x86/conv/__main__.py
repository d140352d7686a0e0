"""Print a conv kernel's LLVM IR or assembly, for either vector path on any host.

    python -m tessera.compiler.targets.x86.conv --emit asm --features +avx512f | filecheck x.mlir
    python -m tessera.compiler.targets.x86.conv --shape 1x96x5x26x26 --out-channels 96 --kernel 3x3x3 --features +avx2,+fma
    python -m tessera.compiler.targets.x86.conv --shape 2x32x17x17 --kernel 3x3 --groups 32 --padding 1 --activation silu
"""

from __future__ import annotations

import argparse
import sys

from tessera.compiler.targets.x86.conv.build import CONV
from tessera.compiler.targets.x86.conv.errors import ConvKernelError, InvalidConvSpec
from tessera.compiler.targets.x86.conv.isa import isa_of_features, select_conv_isa
from tessera.compiler.targets.x86.conv.spec import ACTIVATIONS, ConvSpec


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InvalidConvSpec(f"--{what} wants sizes joined by 'x' (e.g. 3x3), got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tessera.compiler.targets.x86.conv", description=__doc__.splitlines()[0])
    p.add_argument("--emit", choices=CONV.EMITS, default="asm")
    p.add_argument("--shape", default="1x20x9x13", help="input N x C_in x (D x) H x W (default 1x20x9x13)")
    p.add_argument("--out-channels", type=int, default=40)
    p.add_argument("--kernel", default="3x3")
    p.add_argument("--stride", default="1")
    p.add_argument("--padding", default="1")
    p.add_argument("--dilation", default="1")
    p.add_argument("--groups", type=int, default=1)
    p.add_argument("--bias", action="store_true")
    p.add_argument("--residual", action="store_true")
    p.add_argument("--activation", choices=ACTIVATIONS, default="none")
    p.add_argument("--features", default=None,
                   help="LLVM feature string, e.g. +avx512f or +avx2,+fma (default: this host's widest path)")
    p.add_argument("--cpu", default=None, help="LLVM CPU name to tune for (default: generic)")
    args = p.parse_args(argv)

    def spec() -> ConvSpec:
        shape = _ints(args.shape, "shape")
        if len(shape) not in (4, 5):
            raise InvalidConvSpec(f"--shape wants N x C x (D x) H x W, got {args.shape!r}")
        nsp = len(shape) - 2

        def per_dim(text: str, what: str) -> tuple[int, ...]:
            v = _ints(text, what)
            return v * nsp if len(v) == 1 else v

        isa = isa_of_features(args.features) if args.features else select_conv_isa()
        return ConvSpec(shape[0], shape[1], args.out_channels, shape[2:], _ints(args.kernel, "kernel"),
                        per_dim(args.stride, "stride"), per_dim(args.padding, "padding"),
                        per_dim(args.dilation, "dilation"), args.groups, bias=args.bias, residual=args.residual,
                        activation=args.activation, isa=isa)

    return CONV.print_emitted(spec, args.emit, args.features, args.cpu, ConvKernelError)

if __name__ == "__main__":
    sys.exit(main())
