"""Models whose layers hold integers and bools (tests/e2e/test_integer_layers.py): hashed feature ids
(large values, where a relative limit hides any change) and a mask, each with a change of one element
and a rewrite that computes the same values."""

from __future__ import annotations

import torch
from torch import nn


class Bucketize(nn.Module):
    def __init__(self, off_by_one: bool = False, rewritten: bool = False):
        super().__init__()
        self.off_by_one, self.rewritten = off_by_one, rewritten

    def forward(self, x):
        b = torch.bucketize(x, torch.linspace(-3, 3, 64))
        if self.rewritten:
            return b.mul(1000003).add(7 * 10**12)
        ids = b * 1000003 + 7 * 10**12
        return ids + (torch.arange(ids.numel()).reshape(ids.shape) == 5) if self.off_by_one else ids


class Ids(nn.Module):
    def __init__(self, **change):
        super().__init__()
        torch.manual_seed(0)
        self.enc, self.ids = nn.Linear(8, 32), Bucketize(**change)

    def forward(self, x):
        return self.ids(self.enc(x))


class Mask(nn.Module):
    def __init__(self, flipped: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.flipped = nn.Linear(8, 16), flipped

    def forward(self, x):
        m = self.fc(x) > 0
        return torch.logical_xor(m, torch.arange(m.numel()).reshape(m.shape) == 3) if self.flipped else m


def ids() -> nn.Module:
    return Ids()


def ids_off_by_one() -> nn.Module:
    return Ids(off_by_one=True)


def ids_rewritten() -> nn.Module:
    return Ids(rewritten=True)


def mask() -> nn.Module:
    return Mask()


def mask_flipped() -> nn.Module:
    return Mask(flipped=True)
