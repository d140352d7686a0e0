"""The base of the passes that ask a target's models (``target_models``), and
how such a pass asks whether a conv it is about to make goes to the target's
own kernel.

    fuse-conv-residuals{target=x86 features="+avx2,+fma" freezing=true}
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass

from tessera.dialects import tsr

from .target_models import KernelQuery, target_models


def own_kernel_conv(query: KernelQuery, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
                    residual: SSAValue | None, result_type: Attribute, properties: dict,
                    replacing: tsr.ConvOp | None = None) -> tsr.ConvOp | None:
    """A new conv with these operands (``ConvOp.with_epilogue``, not inserted
    anywhere) if the target's own kernel would compute it, else None: how a pass
    asks whether a rewrite it is about to make gives the kernel its conv. Also
    None where the conv it is ``replacing`` runs on the target's own kernels in
    another way (x86: Winograd, which reads and writes channels-last only): a
    rewrite measured against the library does not trade one kernel for another."""
    if target_models(query.target).own_conv_kernel is None:
        return None
    conv = tsr.ConvOp.with_epilogue(input, weight, bias, residual, result_type, properties)
    impl = query.own_conv(conv)
    current = query.own_conv(replacing) if replacing is not None else None
    if impl is not None and (current is None or current == impl):
        return conv
    conv.drop_all_references()
    return None


@dataclass(frozen=True)
class TargetPass(ModulePass):
    """A pass that asks a target's models, for the CPU of ``features``:
    ``fuse-conv-residuals{target=x86 features="+avx2,+fma" freezing=true}``. A bad target
    name is a ``ValueError`` (a bad pass option) naming the known ones."""

    target: str
    features: str = ""
    """The CPU to build for (empty: this host's)."""
    freezing: bool = False
    """Weights are packed once (``torch.compile``'s ``freezing``), not on every call."""

    def __post_init__(self) -> None:
        target_models(self.target)

    @property
    def query(self) -> KernelQuery:
        """What the models are asked with (empty features: this host's)."""
        return KernelQuery(self.target, self.features or None, self.freezing)
