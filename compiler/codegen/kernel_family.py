"""One build path for the kernel families written straight in LLVM IR from a
spec (the int8 GEMM, the convolutions): target, LLVM IR, assembly, artifact.

    INT8_GEMM = KernelFamily(isa_features=lambda isa: get_isa(isa).features,
                             check_features=check_features, module=gemm_module, signature=signature)
    print(INT8_GEMM.assembly(spec, "+avx512vnni"))    # any host: nothing runs
    art = INT8_GEMM.artifact(spec)                    # an x86 object with the kernel's signature

A spec names its instruction path (``spec.isa``); ``features=None`` builds for
that path's portable feature set, and a given feature string must enable the
path (LLVM aborts the process on an intrinsic its target lacks).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from tessera.compiler.codegen.llvm_target import LlvmTarget
from tessera.compiler.codegen.pipeline import optimize
from tessera.compiler.targets.x86.codegen import X86Target
from tessera.runtime.artifact import Artifact
from tessera.runtime.signature import KernelSignature


@dataclass(frozen=True)
class KernelFamily:
    isa_features: Callable[[str], str]
    """The portable LLVM feature string of an instruction path."""
    check_features: Callable[[str, str], None]
    """Raises unless a feature string enables the path's instructions."""
    module: Callable[[Any, LlvmTarget], ir.Module]
    signature: Callable[[Any], KernelSignature]

    def target(self, isa: str, features: str | None = None, cpu: str | None = None) -> X86Target:
        target = X86Target(features=features or self.isa_features(isa), cpu=cpu or "")
        self.check_features(isa, target.features)
        return target

    def llvm_ir(self, spec, features: str | None = None, cpu: str | None = None, optimized: bool = False) -> str:
        target = self.target(spec.isa, features, cpu)
        text = str(self.module(spec, target))
        return str(optimize(text, target)) if optimized else text

    def assembly(self, spec, features: str | None = None, cpu: str | None = None) -> str:
        """x86 assembly with LLVM's loop comments (``# =>This Inner Loop Header``)."""
        target = self.target(spec.isa, features, cpu)
        module = optimize(str(self.module(spec, target)), target)
        target.target_machine.set_asm_verbosity(True)  # this target object is ours alone
        return target.emit_assembly(module)

    EMITS = ("llvm", "opt-llvm", "asm")

    def emit(self, spec, emit: str, features: str | None = None, cpu: str | None = None) -> str:
        """The text a family's ``python -m ... --emit`` prints: one of :data:`EMITS`."""
        if emit == "asm":
            return self.assembly(spec, features, cpu)
        return self.llvm_ir(spec, features, cpu, optimized=emit == "opt-llvm")

    def print_emitted(self, make_spec: Callable[[], Any], emit: str, features: str | None, cpu: str | None,
                      errors: type[Exception]) -> int:
        """The body of a family's ``python -m ... --emit`` CLI: prints the text
        of ``make_spec()``'s kernel, or the message of an ``errors`` exception
        (a bad spec) on stderr; the exit status."""
        try:
            text = self.emit(make_spec(), emit, features, cpu)
        except errors as err:
            print(err, file=sys.stderr)
            return 1
        sys.stdout.write(text)
        return 0

    def artifact(self, spec, features: str | None = None, cpu: str | None = None) -> Artifact:
        """An x86 object holding the spec's kernel and its signature."""
        target = self.target(spec.isa, features, cpu)
        data = target.emit_artifact(optimize(str(self.module(spec, target)), target))
        return Artifact(target=target.name, kind=target.artifact_kind, data=data, signatures=(self.signature(spec),),
                        target_key=target.cache_key())
