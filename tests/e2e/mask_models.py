"""Models that mask values (tests/e2e/test_masked_outputs.py): with ``torch.finfo(dtype).min``, the usual
idiom, the float64 reference holds -DBL_MAX where a float32 runtime holds -FLT_MAX; or with -inf."""

from __future__ import annotations

import torch
from torch import nn


def _fill(t: torch.Tensor, fill: str) -> float:
    return torch.finfo(t.dtype).min if fill == "min" else float("-inf")


class Policy(nn.Module):
    """Action logits with the invalid actions masked: the model's output."""

    def __init__(self, fill: str, scale: float = 1.0):
        super().__init__()
        self.fill, self.scale = fill, scale
        self.body, self.act, self.head = nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.act(self.body(x))) * self.scale
        return logits.masked_fill(x[..., :6] > 0.5, _fill(logits, self.fill))


class Scores(nn.Module):
    """Causal attention scores, masked."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale, self.q, self.k = scale, nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.q(x) @ self.k(x).transpose(-1, -2) * self.scale
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), diagonal=1)
        return s.masked_fill(mask, _fill(s, "min"))


class Attention(nn.Module):
    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scores, self.soft = Scores(scale), nn.Softmax(-1)
        self.v, self.out = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.soft(self.scores(x)) @ self.v(x))


def _seeded(make):
    torch.manual_seed(0)
    return make()


def policy_min() -> nn.Module:
    return _seeded(lambda: Policy("min"))


def policy_min_faulted() -> nn.Module:  # every valid logit 1e-4 larger: a code fault
    return _seeded(lambda: Policy("min", 1.0 + 1e-4))


def policy_inf() -> nn.Module:
    return _seeded(lambda: Policy("inf"))


def policy_inf_faulted() -> nn.Module:
    return _seeded(lambda: Policy("inf", 1.0 + 1e-4))


def attention() -> nn.Module:
    return _seeded(Attention)


def attention_faulted() -> nn.Module:  # the scores' scale 1e-5 off
    return _seeded(lambda: Attention(1.0 + 1e-5))
