"""Models for tests/e2e/test_beside.py: the float64 reference runs in a forked child beside the
export, and these make that child fail, stall or fall back, or keep the parent until it has run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
from torch import nn

from gate.pipeline.beside import MIN_FORWARD_S

PARENT = os.getpid()  # the gate's process: a forked child has another pid and the same module state


class Net(nn.Module):
    def __init__(self, how: str = ""):
        super().__init__()
        self.how = how
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        time.sleep(MIN_FORWARD_S)  # a forward long enough to be worth a process of its own
        h = torch.relu(self.conv(x)).mean(dim=(2, 3))
        if x.dtype == torch.float64 and self.how == "no-float64":  # a kernel with no float64 variant
            raise RuntimeError("this model has no float64 kernel")
        if x.dtype == torch.float64 and self.how == "stalls-beside" and os.getpid() != PARENT:
            time.sleep(600)  # only where it runs beside the export: the parent must not wait for it
        out = self.fc(h)
        ran = os.environ.get("BESIDE_TEST_RAN", "")
        if ran and x.dtype == torch.float64 and os.getpid() != PARENT:
            Path(ran).touch()  # the child's layers are counted: ``after_the_child`` may let the parent go on
        return out


def plain() -> nn.Module:
    return Net()


def no_float64() -> nn.Module:
    return Net("no-float64")


def stalls_beside() -> nn.Module:
    return Net("stalls-beside")


def scaled() -> nn.Module:
    """``plain`` with its first weight scaled by BESIDE_TEST_SCALE: a weight-only change."""
    net = Net()
    with torch.no_grad():
        net.conv.weight.mul_(float(os.environ.get("BESIDE_TEST_SCALE", "1")))
    return net


class Deep(nn.Module):
    """Many operations for a short forward: a trace long enough to hide its reference in."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(40))

    def forward(self, x):
        time.sleep(MIN_FORWARD_S)
        h = torch.relu(self.stem(x)).mean(dim=(2, 3))
        for layer in self.layers:
            h = torch.tanh(layer(h)) + h
        return h


def deep() -> nn.Module:
    return Deep()



def after_the_child(model):
    """A transform that ships the graph as exported, once the child's reference has run its layers
    (the file BESIDE_TEST_RAN names, where set): the parent then finds the child's pace, whatever
    this machine's load, and waits for it rather than stopping it."""
    ran = os.environ.get("BESIDE_TEST_RAN", "")
    deadline = time.monotonic() + 60
    while ran and not os.path.exists(ran) and time.monotonic() < deadline:
        time.sleep(0.02)
    return model
