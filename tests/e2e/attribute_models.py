"""A model holding a table as a plain attribute, loaded from a file beside it (``table.pt``), neither
parameter nor buffer (tests/e2e/test_attribute_data.py); ``register`` holds it as a buffer instead."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).parent


class Held(nn.Module):
    def __init__(self, register: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 4)
        table = torch.load(HERE / "table.pt")
        if register:
            self.register_buffer("table", table)
        else:
            self.table = table

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)) * self.table)


def held() -> nn.Module:
    return Held()

