"""Models whose forward leaves state outside their parameters, for the tests of runs that must
not contaminate each other (``test_isolated_runs``, ``integration/test_pristine``)."""

from __future__ import annotations

import torch
from torch import nn


class BiasCache(nn.Module):
    """As timm's LeViT attention: biases gathered once in eval mode and kept in a plain dict (not
    a buffer), which its own ``_apply`` and ``train`` clear."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.biases = nn.Parameter(torch.randn(4, width))
        self.register_buffer("idx", torch.arange(width) % 4, persistent=False)
        self.ab: dict[str, torch.Tensor] = {}

    def bias(self, device: torch.device) -> torch.Tensor:
        if self.training:
            return self.biases[self.idx]
        key = str(device)
        if key not in self.ab:
            self.ab[key] = self.biases[self.idx]
        return self.ab[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) @ self.bias(x.device)

    def train(self, mode: bool = True):
        super().train(mode)
        if mode:
            self.ab = {}
        return self

    def _apply(self, fn, recurse=True):
        self.ab = {}
        return super()._apply(fn, recurse)


class TableCache(nn.Module):
    """A table computed on the first call and kept in a plain attribute, with no ``_apply`` of its
    own (rotary tables, masks): a float64 table read by a float32 run fails its matmul; a float32
    one read by the float64 reference would make it float32."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.register_buffer("freq", torch.linspace(0.1, 1.0, width))
        self.table: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            self.table = torch.cos(self.freq[:, None] * self.freq[None, :])
        return x @ self.table


class Net(nn.Module):
    def __init__(self, block: nn.Module):
        super().__init__()
        self.inp = nn.Linear(16, 16)
        self.block = block
        self.out = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.block(self.inp(x))))


class CountsCalls(nn.Module):
    """Writes into its buffer in place and adds an attribute on every call."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.last = x.detach()
        return self.lin(x) * self.calls


class ChangesItsWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.lin.weight.mul_(1.5)
        return self.lin(x)


class HooksOnFirstCall(nn.Module):
    """Installs forward hooks on its children at its first call and flags that it did (as
    transformers' output capturing does); a hook that runs twice doubles its child's output."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.keep = self.lin.register_forward_hook(lambda _m, _a, out: out + 1.0)  # the factory's own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not getattr(self, "_hooks_installed", False):
            self.lin.register_forward_hook(lambda _m, _a, out: out * 2.0)
            self._hooks_installed = True
        return self.lin(x)


def bias_cache() -> nn.Module:
    return Net(BiasCache())


def table_cache() -> nn.Module:
    return Net(TableCache())


def counts_calls() -> nn.Module:
    return Net(CountsCalls())


def changes_its_weights() -> nn.Module:
    return Net(ChangesItsWeights())



def hooks_on_first_call() -> nn.Module:
    return Net(HooksOnFirstCall())
