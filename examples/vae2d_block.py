"""A 2-D VAE decoder block (the image-VAE decoder of latent diffusion models):

    GroupNorm -> SiLU -> conv3x3 -> GroupNorm -> SiLU -> conv3x3, + residual,
    then nearest upsample 2x and conv3x3.

Input: 1x32x8x8 (NCHW).
"""

import torch
import torch.nn.functional as F
from torch import nn


class VaeDecoderBlock(nn.Module):
    def __init__(self, channels: int = 32, groups: int = 8):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv_up = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        h = self.conv2(F.silu(self.norm2(h)))
        x = x + h
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        return self.conv_up(x)


def make_block(channels: int = 32, seed: int = 0) -> VaeDecoderBlock:
    torch.manual_seed(seed)
    block = VaeDecoderBlock(channels)
    with torch.no_grad():
        for gn in (block.norm1, block.norm2):
            gn.weight.uniform_(0.5, 1.5)
            gn.bias.uniform_(-0.5, 0.5)
    return block.eval()


def example():
    return make_block(), (torch.randn(1, 32, 8, 8),)


def benchmark():
    """The realistic size of ``bench/models.py``: 128 channels, 1x128x32x32 (64x64 after the upsample)."""
    return make_block(128), (torch.randn(1, 128, 32, 32),)
