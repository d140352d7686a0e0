"""``int8_mm``: pack, compile (through the compile cache, loaded once per process) and run an int8 GEMM.

    c = int8_mm(a_u8, b_s8)                                  # int32 [M, N], exact
    y = int8_mm(a_u8, packed, a_scale=sa, b_scale=sb, bias=bias)   # float32 [M, N]

``b`` is an int8 ``[K, N]`` tensor (packed at run time by the packing kernel)
or a :class:`PackedB` from ``pack_b`` (a frozen weight, packed once). The path
is ``isa`` if given, the packing's if B is packed, else the host's fastest.
"""

from __future__ import annotations

import torch

from tessera.compiler.build import cpu_kernel
from tessera.compiler.targets.x86.int8_gemm.build import build_int8_gemm, gemm_target
from tessera.compiler.targets.x86.int8_gemm.errors import IsaUnavailable, OperandMismatch
from tessera.compiler.targets.x86.int8_gemm.isa import can_run, select_isa
from tessera.compiler.targets.x86.int8_gemm.pack_kernel import build_pack_kernel, pack_kernel_name
from tessera.compiler.targets.x86.int8_gemm.packing import PackedB, check_b, pack_layout
from tessera.compiler.targets.x86.int8_gemm.spec import Int8GemmSpec
from tessera.runtime.kernel import Kernel


def _require_runnable(isa: str) -> None:
    if not can_run(isa):
        raise IsaUnavailable(f"this CPU cannot run the int8 GEMM path {isa!r} (pick one of select_isa()'s choices)")


def load_int8_gemm(spec: Int8GemmSpec, features: str | None = None) -> Kernel:
    """The loaded kernel of ``spec`` (built once per process and thread count)."""
    _require_runnable(spec.isa)
    return cpu_kernel(spec.kernel_name, f"{spec!r} {features}", lambda: gemm_target(spec.isa, features).cache_key(),
                      lambda: build_int8_gemm(spec, features))


def pack_b_kernel(b: torch.Tensor, isa: str | None = None, a_signed: bool = False) -> PackedB:
    """Packs ``b`` ([K, N] int8) with the packing kernel (same bytes as ``pack_b``)."""
    check_b(b)
    isa = isa or select_isa()
    _require_runnable(isa)
    K, N = b.shape
    lay = pack_layout(K, N, isa, a_signed)
    out = torch.empty(lay.shape, dtype=torch.int8)
    name = pack_kernel_name(K, N, isa, a_signed)
    pack = cpu_kernel(name, name, lambda: gemm_target(isa).cache_key(), lambda: build_pack_kernel(K, N, isa, a_signed))
    pack(b.contiguous(), out)
    return PackedB(out, K, N, isa, a_signed)


def _vector(x: torch.Tensor | None, n: int, what: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != 1 or x.shape[0] != n or x.device.type != "cpu":
        got = f"shape {tuple(x.shape)} on {x.device}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise OperandMismatch(f"{what} must be a 1-D cpu tensor of {n} floats, got {got}")
    return x.to(torch.float32).contiguous()


def int8_mm(a: torch.Tensor, b: torch.Tensor | PackedB, a_scale: torch.Tensor | None = None,
            b_scale: torch.Tensor | None = None, bias: torch.Tensor | None = None, *,
            isa: str | None = None) -> torch.Tensor:
    """``a @ b`` exactly in int32 (``a``: [M, K] uint8 or int8, ``b``: int8 [K, N]);
    with ``a_scale`` [M] and ``b_scale`` [N], ``float(a @ b) * a_scale[:, None] *
    b_scale[None, :] (+ bias)`` as float32."""
    if not isinstance(a, torch.Tensor) or a.dim() != 2 or a.dtype not in (torch.uint8, torch.int8) or a.device.type != "cpu":
        what = f"{a.dtype} tensor of rank {a.dim()} on {a.device}" if isinstance(a, torch.Tensor) else type(a).__name__
        raise OperandMismatch(f"A must be a 2-D uint8 or int8 cpu tensor [M, K], got a {what}")
    M, K = a.shape
    a_signed = a.dtype == torch.int8
    if isinstance(b, PackedB):
        isa = isa or b.isa
        b.check(K, b.N, isa, a_signed)
        N = b.N
    else:
        check_b(b)
        if b.shape[0] != K:
            raise OperandMismatch(f"A is [{M}, {K}] but B is {list(b.shape)}: inner sizes differ")
        N = b.shape[1]
    if M == 0 or N == 0 or K == 0:
        raise OperandMismatch(f"empty GEMM [{M}, {K}] x [{K}, {N}]")
    if (a_scale is None) != (b_scale is None):
        raise OperandMismatch("a_scale and b_scale go together (the scaled epilogue needs both)")
    if bias is not None and a_scale is None:
        raise OperandMismatch("bias needs a_scale and b_scale (it is added to the scaled float result)")
    isa = isa or select_isa()
    _require_runnable(isa)
    packed = b if isinstance(b, PackedB) else pack_b_kernel(b, isa, a_signed)
    epilogue = "s32" if a_scale is None else ("scale" if bias is None else "scale_bias")
    spec = Int8GemmSpec(M, N, K, a_signed=a_signed, isa=isa, epilogue=epilogue)
    args = [a.contiguous(), packed.data]
    if a_scale is not None:
        args += [_vector(a_scale, M, "a_scale"), _vector(b_scale, N, "b_scale")]
    if bias is not None:
        args.append(_vector(bias, N, "bias"))
    out = torch.empty(M, N, dtype=torch.int32 if epilogue == "s32" else torch.float32)
    load_int8_gemm(spec)(*args, out)
    return out
