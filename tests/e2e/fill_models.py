"""Models whose layers hold huge fill values beside ordinary ones (tests/e2e/test_fill_values.py): a
logits processor masking disallowed tokens, and attention scores under a causal mask, each with a change of
its ordinary values (a temperature, a scale: 1e-4 relative) and a rewrite that computes the same values;
and the processor applied to the rows a score threshold keeps (a shape that depends on values)."""

from __future__ import annotations

import torch
from torch import nn


class Constrain(nn.Module):
    """Temperature, then the disallowed tokens masked with a large negative number."""

    def __init__(self, temperature: float, fill: float, where: bool):
        super().__init__()
        self.temperature, self.fill, self.where = temperature, fill, where

    def forward(self, logits):
        allowed = torch.arange(logits.shape[-1]) % 2 == 0
        if self.where:
            return torch.where(allowed, logits / self.temperature, torch.full_like(logits, self.fill))
        return (logits / self.temperature).masked_fill(~allowed, self.fill)


class Logits(nn.Module):
    def __init__(self, temperature: float = 1.0, fill: float = -1e30, where: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 32)
        self.constrain = Constrain(temperature, fill, where)

    def forward(self, x):
        return self.constrain(self.head(torch.tanh(self.body(x))))


class Scores(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, q, k):
        s = q @ k.transpose(-1, -2) * self.scale
        causal = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).triu(1)
        return s.masked_fill(causal, -1e30)


class Attention(nn.Module):
    def __init__(self, scale: float = 0.25):
        super().__init__()
        torch.manual_seed(0)
        self.qkv, self.scores, self.out = nn.Linear(16, 48), Scores(scale), nn.Linear(16, 16)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.out(torch.softmax(self.scores(q, k), dim=-1) @ v)


class Picked(Logits):
    """The rows whose score reaches a threshold computed in the model's precision (0.1 x 3: float32 keeps
    the rows at the floor 0.3, float64 does not), then masked: fills in a layer of data-dependent shape."""

    def __init__(self):
        super().__init__(fill=-1e9)

    def forward(self, x):
        logits = self.head(torch.tanh(self.body(x)))
        score = torch.sigmoid(10 * logits[:, 0]).clamp(min=0.3)
        return self.constrain(logits[score >= score.new_tensor(0.1) * 3])


def logits() -> nn.Module:
    return Logits()


def logits_hotter() -> nn.Module:
    return Logits(temperature=1.0001)


def logits_where() -> nn.Module:
    return Logits(where=True)


def logits_1e9() -> nn.Module:
    return Logits(fill=-1e9)


def logits_1e9_hotter() -> nn.Module:
    return Logits(temperature=1.0001, fill=-1e9)


def picked() -> nn.Module:
    return Picked()


def attention() -> nn.Module:
    return Attention()


def attention_rescaled() -> nn.Module:
    return Attention(scale=0.250025)


def shifted_before_mask(model):
    """A transform (what ships only): 1e-3 added to the ordinary values the mask's `Where` keeps, inside
    `constrain`, whose output is the first value captured after it: a runtime-only change beside fills."""
    from onnx import TensorProto, helper

    g = model.graph
    made = {o for n in g.node if n.op_type == "Constant" for o in n.output} | {t.name for t in g.initializer}
    i, node = next((k, n) for k, n in enumerate(g.node) if n.op_type == "Where")
    j = next(j for j in (1, 2) if node.input[j] not in made)  # the values, not the fill
    value = node.input[j]
    g.initializer.append(helper.make_tensor(value + "__shift", TensorProto.FLOAT, [], [1e-3]))
    add = helper.make_node("Add", [value, value + "__shift"], [value + "__shifted"], name=value + "__add")
    add.metadata_props.extend(node.metadata_props)
    node.input[j] = value + "__shifted"
    g.node.insert(i, add)
    return model


def unchanged(model):
    return model
