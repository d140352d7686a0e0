"""Graph and kernel passes, one per module; a pass's CLI name is its module's
name in kebab-case (``cse.py`` -> ``cse``).

``PASSES`` maps each name to its pass class (built on first use). Passes know no target by name:
the pipelines are declared by each target (``compiler/targets``), and what a
pass asks of a target (its cost tables) is registered in ``target_models``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.passes import ModulePass


def _passes() -> dict[str, type[ModulePass]]:
    from .addmm_as_conv import AddmmAsConv
    from .assign_layouts import AssignLayouts
    from .cancel_relayouts import CancelRelayouts
    from .cast_constants import CastConstants
    from .cse import Cse
    from .dce import Dce
    from .fold_affine_into_conv import FoldAffineIntoConv
    from .fold_relayouts_into_convs import FoldRelayoutsIntoConvs
    from .fold_upsample_into_conv import FoldUpsampleIntoConv
    from .free_result_layouts import FreeResultLayouts
    from .fuse_conv_epilogues import FuseConvEpilogues
    from .fuse_conv_residuals import FuseConvResiduals
    from .fuse_int_mm_epilogues import FuseIntMmEpilogues
    from .fuse_kernels import FuseKernels
    from .fuse_relayouts import FuseRelayouts
    from .hoist_relayouts import HoistRelayouts
    from .select_impl import SelectImpl
    from .sink_expands import SinkExpands
    from .split_group_stats import SplitGroupStats
    from .trim_padded_taps import TrimPaddedTaps
    from .widen_half import WidenHalf

    return {
        p.name: p for p in (AddmmAsConv, Cse, Dce, CastConstants, FoldAffineIntoConv, FoldUpsampleIntoConv, AssignLayouts,
                            HoistRelayouts, CancelRelayouts, FuseRelayouts, FoldRelayoutsIntoConvs, FuseConvResiduals,
                            FuseConvEpilogues, FuseIntMmEpilogues, SelectImpl, FuseKernels, WidenHalf,
                            FreeResultLayouts, SinkExpands, SplitGroupStats, TrimPaddedTaps)
    }


def __getattr__(name: str) -> Any:
    """``PASSES``, built on first use: importing one pass module (or the light
    ``target_models``) does not load every pass."""
    if name == "PASSES":
        globals()["PASSES"] = passes = _passes()
        return passes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
