"""Example models the gate checks on itself (and that the demo runs).

Weights are random but keyed by parameter name (a seeded generator per name), so they do
not depend on the order modules are defined in, as weights loaded from a checkpoint do not.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch
from torch import nn


def _draw(name: str, shape: torch.Size, seed: int, uniform: bool = False) -> torch.Tensor:
    """Values keyed by parameter name, drawn by NumPy in float64: the same bits on every CPU
    (torch's own float32 generator takes a vectorized path on some CPUs and not on others)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    values = rng.random(tuple(shape)) if uniform else rng.standard_normal(tuple(shape))
    return torch.from_numpy(values.astype(np.float32))


def init_by_name(model: nn.Module, seed: int = 0) -> nn.Module:
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() > 1:
                p.copy_(_draw(name, p.shape, seed) / p[0].numel() ** 0.5)
            elif "norm" in name or name.split(".")[-2:-1] == ["bn"] or ".bn" in name:
                p.copy_(1.0 + 0.1 * _draw(name, p.shape, seed) if name.endswith("weight")
                        else 0.1 * _draw(name, p.shape, seed))
            else:
                p.copy_(0.1 * _draw(name, p.shape, seed))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(0.1 * _draw(name, b.shape, seed))
            elif name.endswith("running_var"):
                b.copy_(1.0 + 0.2 * _draw(name, b.shape, seed, uniform=True))
    return model


class ResidualBlock(nn.Module):
    """conv-bn-relu-conv-bn, plus the input, then relu: the ReLU module runs twice per call."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x  # in place: bn2's output is overwritten after its hook saw it
        return self.relu(out)


class TinyCNN(nn.Module):
    def __init__(self, channels: int = 16, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                                  nn.ReLU(inplace=True))
        self.block1 = ResidualBlock(channels)
        self.block2 = ResidualBlock(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(self.stem(x)))
        return self.fc(self.drop(torch.flatten(self.pool(x), 1)))


class MergeHeads(nn.Module):
    """(batch, heads, tokens, head_dim) -> (batch, tokens, heads * head_dim)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, t, e = x.shape
        return x.transpose(1, 2).reshape(b, t, h * e)


class SelfAttention(nn.Module):
    """Multi-head self-attention written out, so heads are split and merged explicitly."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.merge = MergeHeads()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        return self.proj(self.merge(att @ v))


class EncoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int, builtin_attention: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.builtin = builtin_attention
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True) if builtin_attention else SelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        if self.builtin:
            h, _weights = self.attn(h, h, h, need_weights=True)  # a module with a tuple output
        else:
            h = self.attn(h)
        x = x + h
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, depth: int = 2, classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(16, dim)
        self.blocks = nn.ModuleList(EncoderBlock(dim, heads, builtin_attention=(i % 2 == 1)) for i in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))


def tiny_cnn() -> nn.Module:
    return init_by_name(TinyCNN())


def tiny_transformer() -> nn.Module:
    return init_by_name(TinyTransformer())
