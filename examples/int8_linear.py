"""An int8 linear layer: quantized activations (uint8 or int8) times an int8
weight through ``torch._int_mm`` (exact int32 accumulation), then a per-row
activation scale, a per-output-channel weight scale and a float bias:

    y = (x_q @ w_q).float() * x_scale[:, None] * w_scale[None, :] + bias

``torch._int_mm`` wants M > 16 and K, N multiples of 8: here M=32, K=64, N=16.
"""

import torch
from torch import nn


class Int8Linear(nn.Module):
    def __init__(self, in_features: int = 64, out_features: int = 16):
        super().__init__()
        w = torch.randint(-128, 128, (in_features, out_features), dtype=torch.int8)
        self.register_buffer("weight", w)  # [K, N], int8
        self.register_buffer("w_scale", torch.rand(out_features) * 0.01 + 0.001)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x_q: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        acc = torch._int_mm(x_q, self.weight)  # [M, N] int32
        return acc.to(torch.float32) * x_scale[:, None] * self.w_scale[None, :] + self.bias


def make_layer(seed: int = 0) -> Int8Linear:
    torch.manual_seed(seed)
    return Int8Linear().eval()


def example_args(signed: bool = False, m: int = 32, k: int = 64, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    if signed:
        x = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=g)
    else:
        x = torch.randint(0, 256, (m, k), dtype=torch.uint8, generator=g)
    scale = torch.rand(m, generator=g) * 0.1 + 0.01
    return x, scale


def example():
    return make_layer(), example_args(signed=False)


def example_signed():
    return make_layer(), example_args(signed=True)
