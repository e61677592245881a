"""Operators whose signature puts a non-tensor argument between tensors (``gather(x, dim, index)``),
as modules, so a sweep can construct them with ``dim`` and call them on its inputs."""

from __future__ import annotations

import torch
from torch import nn


class TakeAlongDim(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x, index):
        return torch.take_along_dim(x, index, dim=self.dim)


class Gather(TakeAlongDim):
    def forward(self, x, index):
        return torch.gather(x, self.dim, index)


class ScatterAdd(TakeAlongDim):
    def forward(self, x, index):
        return torch.scatter_add(x, self.dim, index, torch.tanh(x))


class ScatterAmax(TakeAlongDim):
    def forward(self, x, index):
        return torch.scatter_reduce(x, self.dim, index, torch.sin(x), reduce="amax")


class IndexSelect(TakeAlongDim):
    def forward(self, x, index):
        return torch.index_select(x, self.dim, index[0])
