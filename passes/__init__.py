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
# `graph-opt` stages. The layout passes join these in the next milestone.
PIPELINES: dict[str, tuple[str, ...]] = {
    "x86": ("cse", "dce"),
    "ptx": ("cse", "dce"),
    "metal": ("cse", "dce"),
}
