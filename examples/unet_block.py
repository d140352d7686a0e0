"""A UNet-style block: a down path (stride-2 conv), a middle conv, an up path
(bilinear 2x upsample) and a skip connection concatenated on channels.

    x -> conv_in -> s ---------------------------.
                    s -> conv stride 2 -> ReLU -> conv -> upsample 2x -> cat(s, u) -> conv_out

Input: 1x8x16x16 (NCHW).
"""

import torch
import torch.nn.functional as F
from torch import nn


class UNetBlock(nn.Module):
    def __init__(self, in_channels: int = 8, channels: int = 16):
        super().__init__()
        self.conv_in = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.down = nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1)
        self.mid = nn.Conv2d(2 * channels, channels, 3, padding=1)
        self.conv_out = nn.Conv2d(2 * channels, in_channels, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.conv_in(x))
        d = torch.relu(self.down(s))
        m = self.mid(d)
        u = F.interpolate(m, scale_factor=2.0, mode="bilinear", align_corners=False)
        return self.conv_out(torch.cat([s, u], dim=1))


def make_block(seed: int = 0) -> UNetBlock:
    torch.manual_seed(seed)
    return UNetBlock().eval()


def example():
    return make_block(), (torch.randn(1, 8, 16, 16),)
