"""Graph and kernel passes, one per module; a pass's CLI name is its module's
name in kebab-case (``cse.py`` -> ``cse``).

``PASSES`` maps each name to its pass class. Passes know no target by name:
the pipelines are declared by each target (``compiler/targets``), and what a
pass asks of a target (its cost tables) is registered in ``target_models``.
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
from .select_impl import SelectImpl

PASSES: dict[str, type[ModulePass]] = {
    p.name: p for p in (Cse, Dce, CastConstants, FoldAffineIntoConv, FoldUpsampleIntoConv, AssignLayouts, HoistRelayouts,
                        CancelRelayouts, FuseRelayouts, FoldRelayoutsIntoConvs, FuseConvResiduals, FuseConvEpilogues,
                        FuseIntMmEpilogues, SelectImpl, FuseKernels)
}
