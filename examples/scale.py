"""Large synthetic models for the scale test and benchmark: ``depth`` x (Linear(width, width) +
GELU), then a Linear(width, 16) head. Weights are allocated with ``torch.empty`` and filled from
a seeded generator per layer, so a multi-GB model builds in seconds and the same seed gives the
same bits."""

from __future__ import annotations

import torch
from torch import nn


class Wide(nn.Module):
    def __init__(self, depth: int, width: int, seed: int = 0):
        super().__init__()
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)))
        self.head = nn.Linear(width, 16)
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                g = torch.Generator().manual_seed(seed * 100_003 + i)
                bound = (1.0 / p.shape[-1]) ** 0.5 if p.dim() > 1 else 0.01
                p.uniform_(-bound, bound, generator=g)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x))


def wide(depth: int, width: int = 4096) -> nn.Module:
    return Wide(depth, width)


def wide_2_4gb() -> nn.Module:
    """36 x Linear(4096, 4096): ~2.4 GB of float32 weights (past protobuf's 2 GiB limit)."""
    return wide(36)
