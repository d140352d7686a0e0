"""The model zoo: real models from libraries nobody here wrote (torchvision,
timm, diffusers, transformers), random weights from configs (nothing
downloaded), small inputs. ``test_zoo.py`` checks them against eager;
``bench/zoo.py`` reports and times them.

    model, inputs = ZOO["resnet18"].build()
    y = model(*inputs)

Each :class:`ZooModel` builds its model in eval mode with BatchNorm
statistics calibrated on random inputs (a random-weight network otherwise
drifts into huge or denormal activations, unlike a trained one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn

import torchvision_cpu  # noqa: F401 - before transformers and diffusers, which import torchvision


@dataclass(frozen=True)
class ZooModel:
    name: str
    make: Callable[[], tuple[nn.Module, tuple]]
    """The model (random weights) and its example inputs."""
    library: str
    tolerance: float = 1e-3
    """Relative to the largest output magnitude."""
    training: bool = False
    """Also checked through a training step (loss.backward, parameter gradients). Not
    MobileNetV2: at one 64x64 image its last stages have 4-16 pixels a channel, and a
    ReLU6 whose input rounds to the other side of 0 or 6 than eager's (a Winograd conv's
    rounding) moves a weight gradient by 5-20% (session 36; the step was checked against
    eager graph by graph)."""
    batch_statistics: bool = True
    """BatchNorm normalizes by the batch's statistics in the training step; False: by
    its running ones, where the example's batch statistics are ill-conditioned (one
    image, 2x2 planes at the last stage: eager's own float32 gradients of ResNet-50
    were 30-70% off float64's, session 36)."""
    slow: bool = False
    """Only in the ``slow`` tier."""

    def train(self, model: nn.Module) -> None:
        """``model`` in training mode, deterministic: no dropout, no stochastic depth;
        BatchNorm by its running statistics unless :attr:`batch_statistics`."""
        from torchvision.ops import StochasticDepth

        model.train()
        for m in model.modules():
            if isinstance(m, (nn.Dropout, StochasticDepth)):
                m.p = 0.0
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and not self.batch_statistics:
                m.eval()

    def build(self, seed: int = 0) -> tuple[nn.Module, tuple]:
        torch.manual_seed(seed)
        model, inputs = self.make()
        calibrate(model, inputs)
        return model.eval(), inputs


def calibrate(model: nn.Module, inputs: tuple, steps: int = 3) -> None:
    """BatchNorm running statistics as the cumulative average over a few batches
    of random inputs like ``inputs`` (no gradient)."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(*[torch.randn_like(x) if x.is_floating_point() else x for x in inputs])
    for m in norms:
        m.momentum = 0.1


def image(batch: int = 1, size: int = 64, channels: int = 3) -> tuple:
    return (torch.randn(batch, channels, size, size),)


# -- torchvision -----------------------------------------------------------------------------
def _tv(name: str, size: int = 64, **kwargs) -> Callable[[], tuple[nn.Module, tuple]]:
    def make():
        from torchvision_cpu import torchvision

        return getattr(torchvision.models, name)(weights=None, **kwargs), image(size=size)

    return make


def _tv_video(name: str) -> Callable[[], tuple[nn.Module, tuple]]:
    def make():
        from torchvision_cpu import torchvision

        return getattr(torchvision.models.video, name)(weights=None), (torch.randn(1, 3, 4, 32, 32),)

    return make


# -- timm -------------------------------------------------------------------------------------
def _timm(name: str, size: int = 64) -> Callable[[], tuple[nn.Module, tuple]]:
    def make():
        import timm

        return timm.create_model(name, pretrained=False), image(size=size)

    return make


# -- diffusers ------------------------------------------------------------------------------
class _Decode(nn.Module):
    """A VAE's ``decode``: latents in, the decoded sample out (a tensor, not a dataclass)."""

    def __init__(self, vae: nn.Module):
        super().__init__()
        self.vae = vae

    def forward(self, z):
        return self.vae.decode(z).sample


def _autoencoder_kl():
    from diffusers import AutoencoderKL

    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
                        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                        layers_per_block=1, norm_num_groups=8, sample_size=32)
    return _Decode(vae), (torch.randn(1, 4, 8, 8),)


def _autoencoder_kl_wan():
    from diffusers import AutoencoderKLWan

    vae = AutoencoderKLWan(base_dim=16, z_dim=4, dim_mult=[1, 2], num_res_blocks=1, temperal_downsample=[True],
                           attn_scales=[])
    return _Decode(vae), (torch.randn(1, 4, 2, 8, 8),)


def _sd_vae():
    """Stable Diffusion's VAE decoder at its own config (128-512 channels, two layers a block,
    GroupNorm of 32): a 16x16 latent here, 32x32 (a 256x256 image) with ``bench/zoo.py --size 32``."""
    from diffusers import AutoencoderKL

    vae = AutoencoderKL(block_out_channels=(128, 256, 512, 512), down_block_types=("DownEncoderBlock2D",) * 4,
                        up_block_types=("UpDecoderBlock2D",) * 4, layers_per_block=2)
    return _Decode(vae), (torch.randn(1, 4, 16, 16),)


def _wan_vae():
    """The WAN 2.1 video VAE's decoder at its own config (base_dim 96, z_dim 16): one latent
    frame (one output frame), 16x16 here, 32x32 with ``bench/zoo.py --size 32``."""
    from diffusers import AutoencoderKLWan

    return _Decode(AutoencoderKLWan()), (torch.randn(1, 16, 1, 16, 16),)


class _Unet(nn.Module):
    def __init__(self, unet: nn.Module):
        super().__init__()
        self.unet = unet

    def forward(self, x, t):
        return self.unet(x, t).sample


def _unet2d():
    from diffusers import UNet2DModel

    unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(16, 32), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8, attention_head_dim=8)
    return _Unet(unet), (torch.randn(1, 3, 16, 16), torch.tensor([10]))


# -- transformers ---------------------------------------------------------------------------
class _Hidden(nn.Module):
    """A transformer's last hidden state (or logits) as a plain tensor."""

    def __init__(self, model: nn.Module, field: str = "last_hidden_state"):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, ids):
        return getattr(self.model(input_ids=ids), self.field)


def _tokens(vocab: int, length: int = 16) -> tuple:
    return (torch.randint(0, vocab, (2, length)),)


def _bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    return _Hidden(BertModel(cfg, add_pooling_layer=False)), _tokens(128)


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=2, n_positions=64)
    return _Hidden(GPT2LMHeadModel(cfg), "logits"), _tokens(128)


def _bert_base():
    """BERT-base (12 layers, hidden 768) at sequence 128, batch 1: the issue's realistic config."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return _Hidden(BertModel(cfg, add_pooling_layer=False)), (torch.randint(0, cfg.vocab_size, (1, 128)),)


def _gpt2_small():
    """GPT-2 small (12 layers, hidden 768) at sequence 128, batch 1: its last hidden state."""
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config()
    return _Hidden(GPT2Model(cfg)), (torch.randint(0, cfg.vocab_size, (1, 128)),)


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return _Hidden(LlamaForCausalLM(cfg), "logits"), _tokens(128)


MODELS = [
    ZooModel("resnet18", _tv("resnet18"), "torchvision", training=True),
    ZooModel("resnet50", _tv("resnet50"), "torchvision", training=True, batch_statistics=False),
    ZooModel("mobilenet_v2", _tv("mobilenet_v2"), "torchvision"),
    ZooModel("mobilenet_v3_small", _tv("mobilenet_v3_small"), "torchvision"),
    ZooModel("efficientnet_b0", _tv("efficientnet_b0"), "torchvision", training=True, batch_statistics=False),
    ZooModel("regnet_y_400mf", _tv("regnet_y_400mf"), "torchvision"),
    ZooModel("resnext50_32x4d", _tv("resnext50_32x4d"), "torchvision"),
    ZooModel("convnext_tiny", _tv("convnext_tiny"), "torchvision"),
    ZooModel("densenet121", _tv("densenet121"), "torchvision"),
    ZooModel("shufflenet_v2_x0_5", _tv("shufflenet_v2_x0_5"), "torchvision"),
    ZooModel("squeezenet1_0", _tv("squeezenet1_0"), "torchvision"),
    ZooModel("r3d_18", _tv_video("r3d_18"), "torchvision"),
    ZooModel("r2plus1d_18", _tv_video("r2plus1d_18"), "torchvision"),
    ZooModel("timm_resnet26d", _timm("resnet26d"), "timm"),
    ZooModel("timm_efficientnet_b0", _timm("efficientnet_b0"), "timm"),
    ZooModel("timm_convnext_atto", _timm("convnext_atto"), "timm"),
    ZooModel("autoencoder_kl_decode", _autoencoder_kl, "diffusers", training=True),
    ZooModel("autoencoder_kl_wan_decode", _autoencoder_kl_wan, "diffusers"),
    ZooModel("unet2d", _unet2d, "diffusers"),
    ZooModel("bert_tiny", _bert, "transformers", training=True),
    ZooModel("gpt2_tiny", _gpt2, "transformers"),
    ZooModel("llama_tiny", _llama, "transformers", training=True),
    ZooModel("sd_vae_decode", _sd_vae, "diffusers", slow=True),
    ZooModel("wan_vae_decode", _wan_vae, "diffusers", slow=True),
    ZooModel("bert_base", _bert_base, "transformers", slow=True),
    ZooModel("gpt2_small", _gpt2_small, "transformers", slow=True),
]
ZOO = {m.name: m for m in MODELS}
