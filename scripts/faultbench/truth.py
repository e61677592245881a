"""The first module a fault changes, found without the gate: both models run in float64 on the
gate's own inputs with a forward hook on every module, and the first module (in the order calls
return) whose output differs in any element is the answer. A fault that changes nothing is inert."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from gate.config import load_config
from gate.model.build import build, inference_mode


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _record(module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[tuple[str, list[torch.Tensor]]]:
    model = copy.deepcopy(module).double()
    calls: list[tuple[str, list[torch.Tensor]]] = []
    handles = [m.register_forward_hook(lambda _m, _i, out, name=name: calls.append(
        (name, [t.detach().clone() for t in _tensors(out)]))) for name, m in model.named_modules() if name]
    wide = tuple(t.double() if t.is_floating_point() else t for t in inputs)
    torch.manual_seed(0)
    with inference_mode():
        calls.append(("", _tensors(model(*wide))))
    for h in handles:
        h.remove()
    return calls


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not bool(((x == y) | (x.isnan() & y.isnan())).all()) if x.is_floating_point() else not torch.equal(x, y):
            return False
    return True


def first_changed(base_config: Path, fault_config: Path) -> str | None:
    """The qualified name of the first module whose output the fault changes (None: inert)."""
    runs = []
    for path in (base_config, fault_config):
        cfg = load_config(path)
        built = build(cfg.models[0], cfg.root)
        runs.append(_record(built.module, built.inputs))
    for (name, a), (_, b) in zip(*runs, strict=False):  # a fault may add calls
        if not _same(a, b):
            return name or "(model output)"
    return None
