"""``select-conv-impl``: decides, once, what computes each convolution, and records
it on the op: the target's own conv kernel (and its vector path) or the library.

    %y = tsr.conv %x, %w, %b {...} : (tensor<1x32x56x56xf32, #tsr.layout<nhwc>>, ...) -> ...
    // select-conv-impl{target=x86 features="+avx512f"} -- the kernel computes it, on zmm:
    %y = tsr.conv %x, %w, %b {..., tsr.impl = "avx512"} : (...) -> ...

A conv without ``tsr.impl`` goes to the library (oneDNN, cuDNN through ATen).
The host program reads the attribute (``conv_impl``) and never asks the
machine; ``features`` name the CPU to build for (empty: this host's, read once
by the target's model). The target's ``own_conv_kernel`` model decides
(``target_models``); a target without one leaves every conv to the library.
Last in the fusion step of a target with its own conv kernel, after the passes
that shape convs for it and the epilogue fusions, so the recorded choice is
about the conv as it will run.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from tessera.dialects import tsr

from .target_models import target_models

IMPL_ATTR = "tsr.impl"


def conv_impl(op: tsr.ConvOp) -> str | None:
    """The implementation ``select-conv-impl`` recorded on ``op`` (None: the library)."""
    attr = op.attributes.get(IMPL_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


@dataclass(frozen=True)
class SelectConvImpl(ModulePass):
    name = "select-conv-impl"

    target: str
    features: str = ""

    def __post_init__(self) -> None:
        target_models(self.target)  # a ValueError naming the known targets

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        choose = target_models(self.target).own_conv_kernel
        for conv in [o for o in op.walk() if isinstance(o, tsr.ConvOp)]:
            impl = choose(conv, self.features or None) if choose is not None else None
            if impl is None:
                conv.attributes.pop(IMPL_ATTR, None)
            else:
                conv.attributes[IMPL_ATTR] = StringAttr(impl)
