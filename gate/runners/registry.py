"""Which runner runs a provider: chosen by the provider's kind, imported only when used (the
PyTorch runners import torch; a runner with only ONNX Runtime never does)."""

from __future__ import annotations

import importlib

from gate.config import ProviderSpec
from gate.config.providers import CPU_EPS
from gate.core import device
from gate.core.target import Target
from gate.runners.base import Runner

RUNNERS = {
    "torch": "gate.runners.torch_eager:TorchEagerRunner",
    "torch-compile": "gate.runners.torch_compile:TorchCompileRunner",
    "onnxruntime": "gate.runners.onnxruntime:OrtRunner",
}


def runner_for(spec: ProviderSpec) -> Runner:
    module, _, cls = RUNNERS[spec.kind.runner].partition(":")
    return getattr(importlib.import_module(module), cls)(spec)


def nominal_target(spec: ProviderSpec) -> Target:
    """The target of a provider that did not run, told without importing its runtime."""
    on_cpu = spec.device == "cpu" if spec.kind.torch else spec.name in CPU_EPS
    return Target(spec.name, device.cpu_class() if on_cpu else device.GPU, spec.precision)
