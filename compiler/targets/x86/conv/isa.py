"""The two fp32 vector paths of the conv kernels, and host selection.

    get_conv_isa("avx512").lanes      # 16 f32 per zmm, 32 registers
    select_conv_isa()                  # "avx512" on this host, "avx2" on an AVX2-only one

A path is its vector width, its register file and the LLVM features of a
portable build; the microkernels are the same generator for both (``llvm.fma``
on ``<lanes x float>``), so the choice of ``ymm``/``zmm`` is the only
per-path code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tessera.compiler.targets.x86.codegen import enabled_features
from tessera.compiler.targets.x86.conv.errors import ConvIsaUnavailable, UnknownConvIsa

CONV_ISAS = ("avx512", "avx2")


@dataclass(frozen=True)
class ConvIsa:
    name: str
    lanes: int
    """f32 lanes of one vector register."""
    registers: int
    """Vector registers the register tile may use."""
    features: str
    """LLVM feature string of a portable build."""
    requires: tuple[str, ...]
    embedded_broadcast: bool
    """Whether an FMA reads its broadcast operand straight from memory (no register)."""

    def max_pixels(self, nv: int) -> int:
        """The widest tile of ``nv`` output-channel vectors that fits the registers:
        ``mr * nv`` accumulators, ``nv`` weight vectors and (without embedded
        broadcast) one broadcast input; at most 24 pixels."""
        spare = self.registers - nv - (0 if self.embedded_broadcast else 1) - 1
        return max(1, min(24, spare // nv))


PATHS = {
    "avx512": ConvIsa("avx512", 16, 32, "+avx512f,+avx512vl,+avx512dq,+avx512bw,+avx2,+avx,+fma,+f16c,+bmi,+bmi2",
                      ("avx512f",), True),
    "avx2": ConvIsa("avx2", 8, 16, "+avx2,+avx,+fma,+f16c,+bmi,+bmi2", ("avx2", "fma"), False),
}


def get_conv_isa(name: str) -> ConvIsa:
    try:
        return PATHS[name]
    except KeyError:
        raise UnknownConvIsa(f"unknown conv isa {name!r}; known: {', '.join(CONV_ISAS)}") from None


def _host() -> frozenset[str]:
    from tessera.runtime.cpu import host_features

    return frozenset(host_features())


def can_run_conv(isa: str, features: Iterable[str] | None = None) -> bool:
    have = _host() if features is None else frozenset(f.lstrip("+") for f in features)
    return set(get_conv_isa(isa).requires) <= have


def select_conv_isa(features: Iterable[str] | None = None) -> str:
    """The widest path this CPU (or ``features``) runs: ``avx512`` > ``avx2``."""
    for name in CONV_ISAS:
        if can_run_conv(name, features):
            return name
    raise ConvIsaUnavailable("no conv kernel path for this CPU: it needs at least avx2 and fma")


def isa_of_features(feature_string: str) -> str:
    """The path an LLVM feature string builds: ``+avx512f`` -> ``avx512``, ``+avx2,+fma`` -> ``avx2``."""
    on = enabled_features(feature_string)
    if "avx512f" in on:
        return "avx512"
    if {"avx2", "fma"} <= on:
        return "avx2"
    raise ConvIsaUnavailable(f"features {feature_string!r} enable neither +avx512f nor +avx2,+fma")


def check_features(isa: str, feature_string: str) -> None:
    missing = [f for f in get_conv_isa(isa).requires if f not in enabled_features(feature_string)]
    if missing:
        raise ConvIsaUnavailable(f"conv isa {isa!r} needs +{', +'.join(missing)} in the target features {feature_string!r}")
