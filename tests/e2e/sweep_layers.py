"""Custom layers for the sweep tests: what a team gates beside PyTorch's own modules."""

from __future__ import annotations

import os

import torch
from torch import nn


class Scaled(nn.Module):
    """x * k + a learned bias. ``PG_SWEEP_FAULT=<k>`` changes the forward of the case with that k
    (an injected regression in one case of a sweep)."""

    def __init__(self, k: int, features: int = 16):
        super().__init__()
        self.k = k
        self.bias = nn.Parameter(torch.linspace(-1.0, 1.0, features))

    def forward(self, x):
        scale = float(self.k) * (1.001 if os.environ.get("PG_SWEEP_FAULT") == str(self.k) else 1.0)
        return torch.tanh(x * scale + self.bias)


class Broken(nn.Module):
    """A constructor that fails for one value: the other cases must still be judged."""

    def __init__(self, k: int):
        super().__init__()
        if k == 3:
            raise ValueError("k = 3 is not supported")
        self.k = k

    def forward(self, x):
        return x * self.k


class Norm(nn.Module):
    """Normalization over the last dimension: PyTorch's LayerNorm, the same written by hand, or
    RMSNorm (no mean subtracted: a different function, which a pair must catch)."""

    def __init__(self, kind: str, features: int = 16):
        super().__init__()
        self.kind, self.ln = kind, nn.LayerNorm(features, elementwise_affine=False)

    def forward(self, x):
        if self.kind == "layer":
            return self.ln(x)
        if self.kind == "custom":
            mean = x.mean(-1, keepdim=True)
            var = ((x - mean) ** 2).mean(-1, keepdim=True)
            return (x - mean) / torch.sqrt(var + self.ln.eps)
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.ln.eps)
