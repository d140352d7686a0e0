"""A ResNet basic block in eval mode: conv3x3 -> BN -> ReLU -> conv3x3 -> BN,
plus the identity shortcut, then ReLU.

    compilerctl import examples/resnet_block.py

``example()`` gives a 1x8x8x8 NCHW input; ``example_channels_last()`` the same
block on a channels-last input (the graph then carries ``#tsr.layout<nhwc>``).
"""

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


def make_block(channels: int = 8, seed: int = 0) -> BasicBlock:
    torch.manual_seed(seed)
    block = BasicBlock(channels)
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        for bn in (block.bn1, block.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return block.eval()


def example():
    block = make_block()
    return block, (torch.randn(1, 8, 8, 8),)


def example_channels_last():
    block = make_block().to(memory_format=torch.channels_last)
    x = torch.randn(1, 8, 8, 8).to(memory_format=torch.channels_last)
    return block, (x,)


def benchmark():
    """The realistic size of ``bench/models.py``: a ResNet-18 stage-1 block, 1x64x56x56."""
    return make_block(64), (torch.randn(1, 64, 56, 56),)
