"""A model for the ``layer-tolerances`` tests: a Conv the export folds into the BatchNorm after it, and a
layer that runs only in the larger batch-size case."""

from __future__ import annotations

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv1d(4, 8, 3), nn.BatchNorm1d(8)
        self.fc2, self.wide = nn.Linear(32, 4), nn.ReLU()

    def forward(self, x):
        x = self.fc2(torch.tanh(self.bn(self.conv(x))).flatten(1))
        return self.wide(x) if x.shape[0] > 2 else x  # a case-dependent branch: only batch 8 runs `wide`


def net() -> nn.Module:
    torch.manual_seed(0)
    return Net().eval()
