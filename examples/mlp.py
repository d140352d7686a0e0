"""A transformer MLP with pre-LayerNorm and a residual:
``x + fc2(gelu(fc1(layernorm(x))))``. Input: 2x8x32 (batch, tokens, features).
"""

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, dim: int = 32, hidden: int = 64):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


def make_mlp(seed: int = 0) -> Mlp:
    torch.manual_seed(seed)
    mlp = Mlp()
    with torch.no_grad():
        mlp.norm.weight.uniform_(0.5, 1.5)
        mlp.norm.bias.uniform_(-0.5, 0.5)
    return mlp.eval()


def example():
    return make_mlp(), (torch.randn(2, 8, 32),)


def benchmark():
    """The realistic size of ``bench/models.py``: a transformer MLP, 512 -> 2048 -> 512 on 8x64 tokens."""
    torch.manual_seed(0)
    return Mlp(512, 2048).eval(), (torch.randn(8, 64, 512),)
