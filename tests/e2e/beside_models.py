"""Models for tests/e2e/test_beside.py: the float64 reference runs in a forked child beside the
export, and these make that child fail, stall or fall back."""

from __future__ import annotations

import os
import time

import torch
from torch import nn

from gate.commands.beside import MIN_FORWARD_S

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
        return self.fc(h)


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


class WaitsForAhead(Net):
    """A reference that, in the child, waits until a provider's worker has started beside it (the file
    AHEAD_TEST_STARTED names, written by ``ahead_hooks.log``): still running when the export ends,
    on any machine. ``narrower``: in float64 its last layer sees one sample of two, so the reference's
    element count there is not the probe's."""

    def __init__(self, narrower: bool = False):
        super().__init__()
        self.narrower = narrower
        self.extra = nn.Linear(4, 4)

    def forward(self, x):
        if x.dtype == torch.float64 and os.getpid() != PARENT:
            started = os.environ.get("AHEAD_TEST_STARTED", "")
            deadline = time.monotonic() + 60
            while started and not os.path.exists(started) and time.monotonic() < deadline:
                time.sleep(0.02)
        out = super().forward(x)
        return self.extra(out[:1] if self.narrower and x.dtype == torch.float64 else out)


def waits_for_ahead() -> nn.Module:
    return WaitsForAhead()


def narrower_in_float64() -> nn.Module:
    return WaitsForAhead(narrower=True)


def scaled_waits_for_ahead() -> nn.Module:
    """``waits_for_ahead`` with its first weight scaled by BESIDE_TEST_SCALE: a weight-only change."""
    net = WaitsForAhead()
    with torch.no_grad():
        net.conv.weight.mul_(float(os.environ.get("BESIDE_TEST_SCALE", "1")))
    return net
