"""Factories for the fault-injection and benign-change tests: the example models, changed.

Each fault names the module it changes (``INJECTED``); the gate must name that module as the
first regression. Benign changes keep the math and must pass.
"""

from __future__ import annotations

import torch
from torch import nn

from examples import zoo

INJECTED = {
    "cnn_weight_1e3": ("tiny-cnn", "block2.conv1"),
    "cnn_bn_eps": ("tiny-cnn", "block1.bn2"),
    "cnn_nan": ("tiny-cnn", "block1.conv2"),
    "tf_weight_1e6": ("tiny-transformer", "blocks.1.mlp.0"),
    "tf_gelu_tanh": ("tiny-transformer", "blocks.0.mlp.1"),
    "tf_ln_eps": ("tiny-transformer", "blocks.1.norm2"),
    "tf_transpose": ("tiny-transformer", "blocks.0.attn.merge"),
}


def _scale(param: torch.Tensor, factor: float) -> None:
    with torch.no_grad():
        param.mul_(factor)


def cnn_weight_1e3() -> nn.Module:
    m = zoo.tiny_cnn()
    _scale(m.block2.conv1.weight, 1 + 1e-3)
    return m


def cnn_bn_eps() -> nn.Module:
    m = zoo.tiny_cnn()
    m.block1.bn2.eps = 1e-3
    return m


def cnn_nan() -> nn.Module:
    m = zoo.tiny_cnn()
    with torch.no_grad():
        m.block1.conv2.weight[3, 0, 1, 1] = float("nan")
    return m


def tf_weight_1e6() -> nn.Module:
    m = zoo.tiny_transformer()
    _scale(m.blocks[1].mlp[0].weight, 1 + 1e-6)
    return m


def tf_gelu_tanh() -> nn.Module:
    m = zoo.tiny_transformer()
    m.blocks[0].mlp[1] = nn.GELU(approximate="tanh")
    return m


def tf_ln_eps() -> nn.Module:
    m = zoo.tiny_transformer()
    m.blocks[1].norm2.eps = 1e-3
    return m


class BuggyMerge(nn.Module):
    """Merges heads without the transpose: same shape, values in the wrong places."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, t, e = x.shape
        return x.reshape(b, t, h * e)


def tf_transpose() -> nn.Module:
    m = zoo.tiny_transformer()
    m.blocks[0].attn.merge = BuggyMerge()
    return m


# Benign changes ---------------------------------------------------------------------------

def cnn_relu_not_inplace() -> nn.Module:
    m = zoo.tiny_cnn()
    m.stem[2] = nn.ReLU()
    m.block1.relu = nn.ReLU()
    m.block2.relu = nn.ReLU()
    return m


class ReorderedBlock(zoo.ResidualBlock):
    """The same block with its modules defined in another order."""

    def __init__(self, channels: int):
        nn.Module.__init__(self)
        self.bn2 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)


class ReorderedCNN(zoo.TinyCNN):
    def __init__(self, channels: int = 16, classes: int = 10):
        nn.Module.__init__(self)
        self.fc = nn.Linear(channels, classes)
        self.drop = nn.Dropout(0.2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.block2 = ReorderedBlock(channels)
        self.block1 = ReorderedBlock(channels)
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                                  nn.ReLU(inplace=True))


def cnn_reordered() -> nn.Module:
    return zoo.init_by_name(ReorderedCNN())


def unseeded_linear() -> nn.Module:
    """A factory that relies on torch's global RNG: the gate seeds it, so reruns agree."""
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


def raises() -> nn.Module:
    raise RuntimeError("checkpoint weights.pt not found")


def not_a_module():
    return {"weights": 1}


def meta_device() -> nn.Module:
    """Weights that hold no data: nothing to hash, run or export."""
    return zoo.tiny_cnn().to("meta")


class Unexportable(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x)
        return torch.linalg.eigh(x @ x.transpose(-1, -2))[0]


def unexportable() -> nn.Module:
    return Unexportable()


class Zero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.0


def all_zero() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 8), Zero())


class NaNs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * float("nan")


def all_nan() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 8), NaNs())


def empty() -> nn.Module:
    return nn.Sequential()


def two_linears() -> nn.Module:
    """A plain model: degenerate only where its inputs have no elements."""
    return nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4))


class ReturnsNone(nn.Module):
    """Runs its layer and returns nothing: nothing ships."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        self.conv(x)


def returns_none() -> nn.Module:
    return ReturnsNone()
