"""From an :class:`Int8GemmSpec` to LLVM IR, assembly and a loadable artifact.

    art = build_int8_gemm(Int8GemmSpec(64, 4096, 4096, isa="avx512vnni"))
    Device("cpu").load(art).kernel(art.signatures[0].name)(a, packed.data, out)
    print(int8_gemm_assembly(Int8GemmSpec(13, 70, 37, isa="avx2")))   # on any host

``features=None`` builds for the path's own feature set (``IsaPath.features``:
code that runs on every CPU with the path); a given feature string must
enable the path's instructions.
"""

from __future__ import annotations

from tessera.compiler.codegen.kernel_family import KernelFamily
from tessera.compiler.targets.x86.int8_gemm.gemm import gemm_module, signature
from tessera.compiler.targets.x86.int8_gemm.isa import check_features, get_isa

INT8_GEMM = KernelFamily(isa_features=lambda isa: get_isa(isa).features, check_features=check_features,
                         module=gemm_module, signature=signature)

gemm_target = INT8_GEMM.target
int8_gemm_llvm_ir = INT8_GEMM.llvm_ir
int8_gemm_assembly = INT8_GEMM.assembly
build_int8_gemm = INT8_GEMM.artifact
