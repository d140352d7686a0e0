"""``select-impl``: decides, once, what computes each convolution and int8 GEMM,
and records it on the op: the target's own kernel (and its vector path) or the library.

    %y = tsr.conv %x, %w, %b {...} : (tensor<1x32x56x56xf32, #tsr.layout<nhwc>>, ...) -> ...
    %c = tsr.int_mm %a, %b : (tensor<32x64xui8>, tensor<64x16xi8>) -> tensor<32x16xi32>
    // select-impl{target=x86 features="+avx512f,+avx512vnni"} -- the kernels compute them:
    %y = tsr.conv %x, %w, %b {..., tsr.impl = "avx512"} : (...) -> ...
    %c = tsr.int_mm %a, %b {tsr.impl = "avx512vnni"} : (...) -> ...

An op without ``tsr.impl`` goes to the library (oneDNN, cuDNN through ATen,
ATen's int8 GEMM). The host program reads the attribute (``impl_of``) and
never asks the machine; ``features`` name the CPU to build for (empty: this
host's, read once by the target's model). The target's ``own_conv_kernel``
and ``own_gemm_kernel`` models decide (``target_models``); a target without
them leaves every such op to the library. Last in the fusion step of a target
with its own kernels, after the passes that shape convs for them and the
epilogue fusions, so the recorded choice is about the op as it will run.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from tessera.dialects import tsr

from .target_pass import TargetPass

IMPL_ATTR = "tsr.impl"


def impl_of(op: Operation) -> str | None:
    """The implementation ``select-impl`` recorded on ``op`` (None: the library)."""
    attr = op.attributes.get(IMPL_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


@dataclass(frozen=True)
class SelectImpl(TargetPass):
    name = "select-impl"

    convs: bool = True
    """``false``: every conv to the library (the backend's ``conv_kernels=False``)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        query = self.query
        for o in list(op.walk()):
            if isinstance(o, tsr.ConvOp):
                impl = query.own_conv(o) if self.convs else None
            elif isinstance(o, (tsr.IntMmOp, tsr.ScaledIntMmOp)):
                impl = query.own_gemm(o)
            else:
                continue
            if impl is None:
                o.attributes.pop(IMPL_ATTR, None)
            else:
                o.attributes[IMPL_ATTR] = StringAttr(impl)
