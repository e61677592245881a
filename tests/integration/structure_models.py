"""Public architectures with random weights and small inputs, for binding new weights into a stored
structure (tests/integration/test_structure.py): torchvision convnets (BatchNorms the optimizer folds
into their convolutions), a ViT, transformers BERT, GPT-2 and Llama (Linear weights the exporter
transposes, tied embeddings, RMSNorm), and buffers named as operations."""

from __future__ import annotations

import torch
from torch import nn


def resnet18() -> nn.Module:
    from torchvision.models import resnet18

    return resnet18(num_classes=10)


def mobilenet() -> nn.Module:
    from torchvision.models import mobilenet_v3_small

    return mobilenet_v3_small(num_classes=10)


def vit() -> nn.Module:
    from torchvision.models import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                              num_classes=10)
    with torch.no_grad():
        model.heads.head.weight.normal_(0, 32**-0.5)  # torchvision zero-initializes it
    return model


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=16))


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=16,
                                      use_cache=False))


def llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    return LlamaModel(LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32,
                                  use_cache=False))


class _Normalized(nn.Module):
    """Buffers ``{prefix}mean`` (persistent) and ``{prefix}var`` (not) beside ``.mean()`` and ``.var()``:
    with no prefix the exporter names a buffer and an operation's output alike."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix
        self.register_buffer(f"{prefix}mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer(f"{prefix}var", torch.full((1, 3, 1, 1), 0.05), persistent=False)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        mean, var = getattr(self, f"{self.prefix}mean"), getattr(self, f"{self.prefix}var")
        h = torch.relu(self.conv((x - mean) / var.sqrt()))
        return self.fc(torch.cat([h.mean((2, 3)), h.var((2, 3))], 1))


def normalized() -> nn.Module:
    return _Normalized("")


def normalized_renamed() -> nn.Module:
    return _Normalized("pix_")
