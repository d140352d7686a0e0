"""A MobileNetV2 inverted-residual block in eval mode: 1x1 expand -> BN -> ReLU6
-> 3x3 depthwise -> BN -> ReLU6 -> 1x1 project -> BN, plus the identity shortcut.

    compilerctl import examples/mobilenet_block.py

Its convs are the classes oneDNN serves least well relative to tessera's own
kernel (``compiler/targets/x86/conv_kernel_model.py``): 1x1 convs and a depthwise one.
``example()`` gives a 1x8x9x9 NCHW input (expansion 6: 48 hidden channels).
"""

import torch
from torch import nn


class InvertedResidual(nn.Module):
    def __init__(self, channels: int, expand: int = 6):
        super().__init__()
        hidden = channels * expand
        self.expand = nn.Conv2d(channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.nn.functional.relu6(self.bn1(self.expand(x)))
        y = torch.nn.functional.relu6(self.bn2(self.depthwise(y)))
        return x + self.bn3(self.project(y))


def make_block(channels: int = 8, seed: int = 0) -> InvertedResidual:
    torch.manual_seed(seed)
    block = InvertedResidual(channels)
    with torch.no_grad():  # non-trivial running statistics and affine parameters
        for bn in (block.bn1, block.bn2, block.bn3):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return block.eval()


def example():
    return make_block(), (torch.randn(1, 8, 9, 9),)


def benchmark():
    """The realistic size of ``bench/models.py``: a MobileNetV2 stage-2 block, 1x24x56x56 (144 hidden channels)."""
    return make_block(24), (torch.randn(1, 24, 56, 56),)
