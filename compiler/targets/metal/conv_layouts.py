"""The Metal layout table of convolutions (MPS through ATen).

conv3d channels-last, conv2d contiguous, as MPSGraph's native layouts; not
measured (no Apple GPU was ever lent to this project).
"""

from __future__ import annotations

from tessera.passes.target_models import Rule, any_conv

CONV_LAYOUTS = (
    Rule("conv3d", lambda c: c.spatial == 3, 1.5),
    Rule("conv1d/conv2d", any_conv, 1.0),
)
