"""Fingerprint every module call of a PyTorch forward.

Forward hooks on every module, containers and the root included. A hook fingerprints the
output at once, before any later in-place op (``ReLU(inplace=True)``, ``out += identity``)
can overwrite it: that is the clone the naive approach needs, without the copy. Tensors are
dropped as soon as they are fingerprinted, so memory does not grow with the number of layers.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from gate.core.layers import layer_name
from gate.fingerprint import Fingerprint, fingerprint
from gate.model.build import inference_mode


@dataclass
class LayerOutput:
    """One module call's output element, as captured."""

    name: str  # "layer1.0.conv1", "act#2", "attn[0]", "(model)[1]"
    module: str  # qualified module name ("" for the root)
    call: int  # 0-based call index of that module in one forward
    element: str  # "" or the tuple/dict suffix, e.g. "[0]"
    type: str  # module class name
    fp: Fingerprint
    alias_of: str | None = None  # an identity module: its output is this earlier layer's tensor


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy view of a tensor for fingerprinting (bfloat16 widened exactly; ints/bools as float64)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    if t.is_floating_point():
        return t.numpy()
    if t.is_complex():
        return torch.view_as_real(t).numpy()
    return t.numpy().astype(np.float64)


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Tensors of a (nested) output with stable suffixes: ``[0]``, ``[key]``, ``[0][1]``."""
    if isinstance(value, torch.Tensor):
        yield prefix, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(item, f"{prefix}[{key}]")
    elif hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers ModelOutput
        yield from flatten(dict(value.items()), prefix)


def outputs(module: torch.nn.Module, value: Any) -> list[LayerOutput]:
    """The root's outputs only (what a compiled model exposes)."""
    return [LayerOutput(layer_name("", 0, element), "", 0, element, type(module).__name__, fingerprint(to_numpy(t)))
            for element, t in flatten(value)]


def run(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[LayerOutput]:
    """One forward with hooks; returns the records in execution (hook completion) order."""
    records: list[LayerOutput] = []
    calls: dict[str, int] = {}
    # id(tensor) -> (weakref, version, layer): an identity module (Dropout in eval, Identity)
    # returns the very tensor it got, unchanged; in-place modules return it with a new version.
    produced: dict[int, tuple[weakref.ref, int, str]] = {}

    def hook(mod: torch.nn.Module, output: Any, qual: str) -> None:
        call = calls.get(qual, 0)
        calls[qual] = call + 1
        for element, tensor in flatten(output):
            name = layer_name(qual, call, element)
            alias = None
            seen = produced.get(id(tensor))
            if seen is not None and seen[0]() is tensor and seen[1] == tensor._version:
                alias = seen[2]
            else:
                produced[id(tensor)] = (weakref.ref(tensor), tensor._version, name)
            records.append(LayerOutput(name, qual, call, element, type(mod).__name__,
                                       fingerprint(to_numpy(tensor)), alias))

    handles = [m.register_forward_hook(_bind(hook, qual)) for qual, m in module.named_modules()]
    try:
        with inference_mode():
            module(*inputs)
    finally:
        for h in handles:
            h.remove()
    return records


def _bind(hook, qual: str):
    def bound(mod, _args, output):
        hook(mod, output, qual)

    return bound
