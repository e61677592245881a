"""Factories and transforms for tests/e2e/test_what_ships.py (copied next to its configs)."""

from __future__ import annotations

import onnx
import torch
import torch.nn.functional as F
from torch import nn

from examples import zoo


class Wrapper(nn.Module):
    """A wrapper left in training mode around a model in eval mode: common, and harmless."""

    def __init__(self):
        super().__init__()
        self.inner = zoo.tiny_cnn().eval()

    def forward(self, x):
        return self.inner(x)


def wrapped_cnn() -> nn.Module:
    return Wrapper()  # Wrapper.training is True, every module inside is in eval mode


def cnn_dropout_left_training() -> nn.Module:
    model = zoo.tiny_cnn().eval()
    model.drop.train()  # a deployment that forgot eval() on this one runs dropout
    return model


class Noisy(nn.Module):
    """``F.dropout`` without ``training=``: it drops in eval mode too, a draw on every forward."""

    def __init__(self, p: float):
        super().__init__()
        self.inner, self.p = zoo.tiny_cnn().eval(), p

    def forward(self, x):
        return self.inner(F.dropout(x, self.p) if self.p else x)


def cnn_no_dropout() -> nn.Module:
    return Noisy(0.0)


def cnn_functional_dropout() -> nn.Module:
    return Noisy(0.1)


def freeze_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """A transform that pins every dynamic input dimension to 2 (as a shape-freezing tool would)."""
    for vi in list(model.graph.input) + list(model.graph.output):
        for dim in vi.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                dim.dim_value = 2
    return model


def cnn_faulted() -> nn.Module:
    """The tiny CNN with one weight scaled by 1 + 1e-4."""
    import torch

    m = zoo.tiny_cnn()
    with torch.no_grad():
        next(p for p in m.parameters() if p.dim() > 1).mul_(1 + 1e-4)
    return m


class Branchy(nn.Module):
    """A forward that branches on its input's values: one traced graph keeps the branch of the inputs it
    was traced on."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b, self.b2, self.c = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        h = self.a(x)
        h = torch.relu(self.b(h)) if x.mean() > 0.0 else torch.tanh(self.b2(h))
        return self.c(h)


def branchy() -> nn.Module:
    return Branchy()


class Heads(nn.Module):
    """Two heads returned in a dict: the keys, in order, as given."""

    def __init__(self, keys: tuple[str, ...]):
        super().__init__()
        torch.manual_seed(0)
        self.keys = keys
        self.body, self.logits = nn.Linear(8, 8), nn.Linear(8, 3)
        self.score, self.aux = nn.Linear(8, 2), nn.Linear(8, 5)

    def forward(self, x):
        h = torch.relu(self.body(x))
        heads = {"logits": self.logits, "scores": self.logits, "score": self.score, "aux": self.aux}
        return {k: heads[k](h) for k in self.keys}


def heads() -> nn.Module:
    return Heads(("logits", "score"))


def heads_reordered() -> nn.Module:
    return Heads(("score", "logits"))


def heads_key_renamed() -> nn.Module:
    return Heads(("scores", "score"))


def heads_one_more_first() -> nn.Module:
    return Heads(("aux", "logits", "score"))
