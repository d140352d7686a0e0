"""What one int8 GEMM kernel computes: a frozen, hashable description.

    Int8GemmSpec(M=64, N=4096, K=4096, a_signed=False, isa="avx512vnni", epilogue="scale_bias")

computes ``C[M, N] = A[M, K] @ B[K, N]`` exactly in int32, A ``uint8`` (or
``int8`` with ``a_signed``) and B ``int8``, then the epilogue:

* ``"s32"``: C as ``int32``;
* ``"scale"``: ``float(C) * a_scale[m] * b_scale[n]`` as ``float32``;
* ``"scale_bias"``: the same ``+ bias[n]`` (each step rounded like torch's eager ops).
"""

from __future__ import annotations

from dataclasses import dataclass

from tessera.compiler.targets.x86.int8_gemm.errors import InvalidSpec, UnknownIsa

ISAS = ("avx512vnni", "avxvnni", "avx2")
EPILOGUES = ("s32", "scale", "scale_bias")


@dataclass(frozen=True)
class Int8GemmSpec:
    M: int
    N: int
    K: int
    a_signed: bool = False
    isa: str = "avx512vnni"
    epilogue: str = "s32"

    def __post_init__(self) -> None:
        for dim in ("M", "N", "K"):
            v = getattr(self, dim)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise InvalidSpec(f"int8 GEMM {dim} must be a positive int, got {v!r}")
        if self.isa not in ISAS:
            raise UnknownIsa(f"unknown int8 GEMM isa {self.isa!r}; known: {', '.join(ISAS)}")
        if self.epilogue not in EPILOGUES:
            raise InvalidSpec(f"unknown int8 GEMM epilogue {self.epilogue!r}; known: {', '.join(EPILOGUES)}")

    @property
    def a_dtype(self) -> str:
        """torch dtype name of A."""
        return "int8" if self.a_signed else "uint8"

    @property
    def out_dtype(self) -> str:
        return "int32" if self.epilogue == "s32" else "float32"

    @property
    def scaled(self) -> bool:
        return self.epilogue != "s32"

    @property
    def has_bias(self) -> bool:
        return self.epilogue == "scale_bias"

    @property
    def kernel_name(self) -> str:
        a = "s8" if self.a_signed else "u8"
        return f"int8_gemm_{a}s8_{self.isa}_{self.epilogue}_{self.M}x{self.N}x{self.K}"
