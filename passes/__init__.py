"""Graph and kernel passes, one per module; a pass's CLI name is its module's
name in kebab-case (``cse.py`` -> ``cse``).

``PASSES`` maps each name to its pass class; ``PIPELINES`` holds the default
pipeline of each target, as data (``compilerctl passes --pipeline x86``).
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from .assign_layouts import AssignLayouts
from .cancel_relayouts import CancelRelayouts
from .cast_constants import CastConstants
from .cse import Cse
from .dce import Dce
from .fold_affine_into_conv import FoldAffineIntoConv
from .fold_relayouts_into_convs import FoldRelayoutsIntoConvs
from .fold_upsample_into_conv import FoldUpsampleIntoConv
from .fuse_conv_epilogues import FuseConvEpilogues
from .fuse_conv_residuals import FuseConvResiduals
from .fuse_int_mm_epilogues import FuseIntMmEpilogues
from .fuse_kernels import FuseKernels
from .fuse_relayouts import FuseRelayouts
from .hoist_relayouts import HoistRelayouts

PASSES: dict[str, type[ModulePass]] = {
    p.name: p for p in (Cse, Dce, CastConstants, FoldAffineIntoConv, FoldUpsampleIntoConv, AssignLayouts, HoistRelayouts,
                        CancelRelayouts, FuseRelayouts, FoldRelayoutsIntoConvs, FuseConvResiduals, FuseConvEpilogues,
                        FuseIntMmEpilogues, FuseKernels)
}


def _graph_pipeline(target: str, constant_policy: str) -> tuple[str, ...]:
    """Typed constants; per-channel affines (an eval BatchNorm) folded into
    the conv before them; convolutions of upsampled tensors computed before
    the upsample (polyphase); each conv's layout from the target's cost model; the
    relayouts that makes hoisted toward producers and inputs (cse merges the
    copies that meet), cancelled in pairs, and fused into the kernels that
    write or read the data; then dead code goes."""
    return (
        f"cast-constants{{policy={constant_policy}}}",
        "fold-affine-into-conv",
        "fold-upsample-into-conv",
        f"assign-layouts{{target={target}}}",
        "hoist-relayouts",
        "cse",
        "cancel-relayouts",
        "fuse-relayouts",
        "cse",
        "dce",
    )


# How each target computes bf16/f16: x86 and CUDA in f32 (as ATen's opmath
# does), Metal in the half type itself. Constants (cast-constants) and kernels
# (the lowering's numerics) follow the same policy.
HALF_COMPUTE: dict[str, str] = {"x86": "f32-compute", "ptx": "f32-compute", "metal": "native"}

# The graph-level pipeline of each target, run between the `graph` and `graph-opt` stages.
PIPELINES: dict[str, tuple[str, ...]] = {t: _graph_pipeline(t, policy) for t, policy in HALF_COMPUTE.items()}

# The fusion step (between `graph-opt` and `fused`) of each target: library ops take the
# epilogues they compute themselves, then the remaining pointwise/reduction groups become
# kernels. On x86 alone, where tessera's conv kernel computes a conv, it reads its input
# without a relayout where that pays (fold-relayouts-into-convs) and takes its residual add in
# its epilogue (fuse-conv-residuals); GPU convs (cuDNN through ATen) would add it in an ATen kernel.
_EPILOGUES_AND_KERNELS = ("fuse-conv-epilogues", "fuse-int-mm-epilogues", "dce", "fuse-kernels")
OWN_CONV_KERNEL_PASSES = ("fold-relayouts-into-convs", "fuse-conv-residuals")
"""The fusion passes that shape convs for tessera's own conv kernel (left out when it is not used)."""
FUSION_PIPELINES: dict[str, tuple[str, ...]] = {
    "x86": ("fold-relayouts-into-convs", "fuse-conv-residuals", *_EPILOGUES_AND_KERNELS),
    "ptx": _EPILOGUES_AND_KERNELS,
    "metal": _EPILOGUES_AND_KERNELS,
}
