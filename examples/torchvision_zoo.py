"""torchvision models with random weights (``weights=None``: nothing is downloaded)."""

from __future__ import annotations

from torch import nn


def resnet18() -> nn.Module:
    import torchvision

    return torchvision.models.resnet18(weights=None)


def resnet50() -> nn.Module:
    import torchvision

    return torchvision.models.resnet50(weights=None)
