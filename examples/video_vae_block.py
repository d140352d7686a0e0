"""A video-VAE decoder block (causal 3-D convolutions, as in video VAEs):

    GroupNorm -> SiLU -> causal pad -> Conv3d 3x3x3 -> GroupNorm -> SiLU
    -> causal pad -> Conv3d 3x3x3, + residual, then nearest upsample and Conv3d.

The causal pad ``F.pad(x, (1, 1, 1, 1, 2, 0))`` pads H and W by one on each
side and time by two frames in front only, so a frame never sees the future;
the convolutions themselves have ``padding=0``. Input: 1x32x4x16x16 (NCDHW).
"""

import torch
import torch.nn.functional as F
from torch import nn


def causal_pad(x: torch.Tensor) -> torch.Tensor:
    return F.pad(x, (1, 1, 1, 1, 2, 0))


class VideoDecoderBlock(nn.Module):
    def __init__(self, channels: int = 32, groups: int = 8, upsample_time: bool = False):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv1 = nn.Conv3d(channels, channels, 3)
        self.norm2 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv3d(channels, channels, 3)
        self.scale = (2.0, 2.0, 2.0) if upsample_time else (1.0, 2.0, 2.0)
        self.conv_up = nn.Conv3d(channels, channels, 3, padding=1)

    def forward(self, x):
        h = self.conv1(causal_pad(F.silu(self.norm1(x))))
        h = self.conv2(causal_pad(F.silu(self.norm2(h))))
        x = x + h
        x = F.interpolate(x, scale_factor=self.scale, mode="nearest")
        return self.conv_up(x)


def make_block(channels: int = 32, upsample_time: bool = False, seed: int = 0) -> VideoDecoderBlock:
    torch.manual_seed(seed)
    block = VideoDecoderBlock(channels, upsample_time=upsample_time)
    with torch.no_grad():
        for gn in (block.norm1, block.norm2):
            gn.weight.uniform_(0.5, 1.5)
            gn.bias.uniform_(-0.5, 0.5)
    return block.eval()


def example():
    return make_block(), (torch.randn(1, 32, 4, 16, 16),)


def benchmark():
    """The realistic size of ``bench/models.py``: a 64-channel slice, 1x64x4x32x32."""
    return make_block(64), (torch.randn(1, 64, 4, 32, 32),)
