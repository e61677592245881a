"""Layer names: the module's qualified name, ``#k`` for its k-th call (k >= 2), and an
element suffix for tuple/list/dict outputs (``attn[0]``, ``(model)[logits]``)."""

from __future__ import annotations

import re

ROOT = "(model)"  # the root module: its outputs are the model's outputs


def layer_name(module: str, call: int, element: str = "") -> str:
    base = module if module else ROOT
    if call:
        base = f"{base}#{call + 1}"
    return base + element


def module_of(name: str) -> str:
    """The module a layer is a call of: ``block.conv#2[0]`` -> ``block.conv``; the model's outputs -> ``(model)``."""
    return re.split(r"[#\[]", name, maxsplit=1)[0]


def renamed_modules(renames: dict[str, str]) -> dict[str, str]:
    """Layer renames (now -> baseline) as module renames: a module is what its first call, or a later call
    as that call, was matched to; never what another module's call was (a block now shared was two: its
    second call is the second block, its tensors the first's)."""
    return {module_of(new): module_of(old) for new, old in renames.items()
            if "#" not in new or new[len(module_of(new)):] == old[len(module_of(old)):]}


def is_output(name: str) -> bool:
    """Whether a layer is one of the model's outputs (a call of the root module)."""
    return name.startswith(ROOT)


GRADIENT = "grad:"  # ``grad:<parameter>``: a parameter's gradient of the seeded loss (``gradients = true``)
FORWARD_ONLY = "ONNX Runtime providers are forward-only (gradients are checked on the PyTorch providers)"


def is_gradient(name: str) -> bool:
    return name.startswith(GRADIENT)
