"""A model with a custom autograd.Function: its backward can change while its forward does not."""

from __future__ import annotations

import os

import torch
from torch import nn


class SiLU(torch.autograd.Function):
    """x * sigmoid(x) with a hand-written derivative. ``PG_GRAD_FAULT=1`` drops a term of it: the
    forward pass is unchanged, only training would notice."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        if os.environ.get("PG_GRAD_FAULT") == "1":
            return grad * s * (1 + x * (1 - s) * 0.999)
        return grad * s * (1 + x * (1 - s))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.lin2(SiLU.apply(self.lin1(x)))


def net() -> nn.Module:
    return Net()
