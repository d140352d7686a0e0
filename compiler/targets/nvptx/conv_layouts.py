"""The CUDA layout table of convolutions (cuDNN through ATen).

Tensor-core convolutions read NHWC/NDHWC natively for f16/bf16 (cuDNN's
documented preference); f32 stays contiguous. Not measured (the GPU lent
once, in session 8, ran correctness checks only): the table is NVIDIA's
guidance until a GPU run replaces it.
"""

from __future__ import annotations

from tessera.passes.target_models import Rule, any_conv

CONV_LAYOUTS = (
    Rule("conv1d", lambda c: c.spatial == 1, 1.0),
    Rule("f16/bf16 conv (tensor cores read NHWC)", lambda c: c.half, 1.5),
    Rule("f32 conv", any_conv, 1.0),
)
