"""A model neither ONNX exporter converts, as a Hugging Face Mixtral's router is: what can be gated
without a graph must still be (``test_export_fail``)."""

from __future__ import annotations

import torch
from torch import nn


class Router(nn.Module):
    """Counts tokens per bin with ``torch.histc`` over the data's own range, as mixture-of-experts
    routers do: neither ONNX exporter converts it (``aten::histc``)."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(16, 4)
        self.up = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        counts = torch.histc(self.gate(x), bins=4)
        return self.up(x) * (1 + counts.max() / x.shape[0])


def router() -> nn.Module:
    return Router()


def router_changed() -> nn.Module:
    """``router`` with one weight of ``up`` scaled by 1.001: a change the PyTorch side must name."""
    m = Router()
    with torch.no_grad():
        m.up.weight[0, 0] *= 1.001
    return m
