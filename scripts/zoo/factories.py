"""What a row's config names: ``build_for(name)`` is the zero-argument factory, ``inputs_for(name)`` the
inputs callable (seed -> tensors). With ``ZOO_FAULT=<module>`` in the environment the factory scales
that module's weight by ``1 + FAULT_EPS``: the same pull request to the weights on every run."""

from __future__ import annotations

import os

import torch

from zoo import specs

FAULT_ENV = "ZOO_FAULT"
FAULT_EPS = 1e-3


def scale_weight(model: torch.nn.Module, path: str, eps: float = FAULT_EPS) -> None:
    with torch.no_grad():
        model.get_submodule(path).weight.mul_(1 + eps)


def build_for(name: str):
    spec = specs()[name]

    def build() -> torch.nn.Module:
        model = spec.build()
        fault = os.environ.get(FAULT_ENV)
        if fault:
            scale_weight(model, fault)
        return model
    build.__name__ = f"build_{name}"
    return build


def inputs_for(name: str):
    return specs()[name].inputs
