"""Graph and kernel passes, one per module; a pass's CLI name is its module's
name in kebab-case (``cse.py`` -> ``cse``).

``PASSES`` maps each name to its pass class; ``PIPELINES`` holds the default
pipeline of each target, as data (``compilerctl passes --pipeline x86``).
"""

from __future__ import annotations

from xdsl.passes import ModulePass

from .cancel_relayouts import CancelRelayouts
from .cast_constants import CastConstants
from .cse import Cse
from .dce import Dce

PASSES: dict[str, type[ModulePass]] = {p.name: p for p in (Cse, Dce, CastConstants, CancelRelayouts)}

# The graph-level pipeline of each target, run between the `graph` and
# `graph-opt` stages. x86 and CUDA compute bf16/f16 in f32 (as ATen's opmath
# does), Metal in the half type itself. assign-, hoist- and fuse-relayouts
# join these next.
_LAYOUT_CLEANUP = ("cancel-relayouts", "cse", "dce")
PIPELINES: dict[str, tuple[str, ...]] = {
    "x86": ("cast-constants{policy=f32-compute}", *_LAYOUT_CLEANUP),
    "ptx": ("cast-constants{policy=f32-compute}", *_LAYOUT_CLEANUP),
    "metal": ("cast-constants{policy=native}", *_LAYOUT_CLEANUP),
}
