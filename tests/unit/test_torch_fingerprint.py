"""Which fingerprint path a captured tensor takes, and that both paths see the same values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gate.fingerprint as F
from gate.env import DEVICE_FINGERPRINT
from gate.errors import ConfigError
from gate.fingerprint.torch_ops import error_bound
from gate.model import torch_hooks
from gate.model.torch_fingerprint import device_fingerprinter, on_device, on_host

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("device, path", [("cpu", on_host), ("cuda", on_device), ("cuda:1", on_device),
                                          (torch.device("cuda", 0), on_device), ("meta", on_host),
                                          ("mps", on_host)])
def test_cuda_tensors_are_fingerprinted_on_the_device_and_the_rest_on_the_host(monkeypatch, device, path):
    monkeypatch.delenv(DEVICE_FINGERPRINT, raising=False)
    assert device_fingerprinter(device) is path


def test_the_environment_can_send_cuda_tensors_to_the_host(monkeypatch):
    monkeypatch.setenv(DEVICE_FINGERPRINT, "host")
    assert device_fingerprinter("cuda") is on_host
    monkeypatch.setenv(DEVICE_FINGERPRINT, "gpu")
    with pytest.raises(ConfigError, match="PARITY_GATE_DEVICE_FINGERPRINT='gpu': expected 'device' or 'host'"):
        device_fingerprinter("cuda")
    assert device_fingerprinter("cpu") is on_host  # CPU tensors never ask


@pytest.mark.parametrize("make", [
    lambda: torch.randint(-100, 100, (3, 50)).to(torch.bfloat16),  # widened to float32 on both paths
    lambda: torch.randint(-100, 100, (7, 9), dtype=torch.int64),  # integers as float64
    lambda: torch.randint(0, 2, (33,)).bool(),
    lambda: torch.complex(torch.randint(-5, 5, (20,)).float(), torch.randint(-5, 5, (20,)).float()),
    lambda: torch.randint(-9, 9, (4, 5)).to(torch.float16).t(),  # strided
    lambda: torch.tensor(2.5, dtype=torch.float64),
], ids=["bfloat16", "int64", "bool", "complex64", "float16-strided", "0-d"])
def test_both_paths_give_the_same_fingerprint(make):
    t = make()  # integer values: every sum exact, so the two paths agree bit for bit
    assert on_device(t) == on_host(t)
    assert on_device(t).dtype == on_host(t).dtype


def test_float_activations_agree_within_the_summation_bound():
    t = torch.randn(8, 64, 7, 7) * 3
    a, b = on_device(t), on_host(t)
    assert a.quantiles == b.quantiles and (a.min, a.max, a.nan) == (b.min, b.max, b.nan)
    assert abs(a.sumsq - b.sumsq) <= error_bound(a.count, b.sumsq)
    assert F.relative_error(a, b) < 1e-12


def test_a_capture_on_cpu_matches_the_host_fingerprints():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(144, 5))
    x = torch.randn(2, 3, 8, 8)
    records = torch_hooks.run(model, (x,))
    with torch.no_grad():
        h = model[0](x)
    first = next(r for r in records if r.name == "0")
    assert first.fp == F.fingerprint(h.numpy())


class _Rehooked(torch.nn.Module):
    """A forward that hooks its own output after the capture's hooks: what it returns is scaled."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        self._forward_hooks.clear()
        self.register_forward_hook(lambda _m, _a, out: out * (1 + 1e-4))
        return self.fc(x)


def test_the_models_outputs_are_fingerprinted_as_the_forward_returned_them():
    model, x = _Rehooked(), torch.randn(2, 4)
    capture = torch_hooks.Capture(model)
    records = capture.run((x,))
    (out,) = [r for r in records if r.name == "(model)"]
    assert out.fp == F.fingerprint(capture.output.numpy())
    assert out.fp != next(r for r in records if r.name == "fc").fp  # the scale is in it


@cuda
def test_cuda_tensors_agree_with_the_specification():
    x = torch.randn(3, 1000, 77, dtype=torch.float64)
    x[0, 0, 0], x[1, 1, 1], x[2, 2, 2] = math.nan, math.inf, -0.0
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        t = x.to(dtype)
        got, want = on_device(t.cuda()), on_host(t)
        assert got.quantiles == want.quantiles or all(
            (a == b) or (math.isnan(a) and math.isnan(b)) for a, b in zip(got.quantiles, want.quantiles, strict=True))
        assert (got.nan, got.posinf, got.zero, got.min, got.max) == (want.nan, want.posinf, want.zero, want.min, want.max)
        assert abs(got.sumsq - want.sumsq) <= error_bound(got.count, want.sumsq)
        assert np.all(np.abs(got.sketch - want.sketch) <= error_bound(got.count, want.sumabs))


@cuda
def test_a_cuda_capture_fingerprints_on_the_device():
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU()).cuda()
    x = torch.randn(4, 16, device="cuda")
    records = torch_hooks.run(model, (x,))
    with torch.no_grad():
        want = on_host(model[0](x))
    got = next(r for r in records if r.name == "0").fp
    assert got.quantiles == want.quantiles and F.relative_error(got, want) < 1e-12
