"""Pick the module a row's weight fault goes into, deep in the model, by running it once:
``python -m zoo.pick NAME`` prints ``{"layer": ..., "candidates": N, "index": i}`` (or ``{"error": ...}``
and exits 3).

Candidates are the modules that run in an eval-mode forward and own a floating ``weight`` that is not
all zeros (scaling zeros changes nothing: Gemma's RMSNorm stores ``weight`` as an offset from 1) and
not shared with another module (a tied embedding would move two places at once). The pick is the one
at ``DEPTH`` of them in the order their first calls finish."""

from __future__ import annotations

import json
import sys

import torch

from zoo import specs

DEPTH = 0.6


def candidates(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[str]:
    owners: dict[int, list[str]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        w = module._parameters.get("weight")
        if isinstance(w, torch.Tensor) and w.is_floating_point():
            owners.setdefault(id(w), []).append(path)
    eligible = {paths[0] for paths in owners.values() if len(paths) == 1}
    order: list[str] = []
    hooks = []
    for path, module in model.named_modules():
        if path in eligible and bool(module.weight.detach().abs().max() > 0):
            hooks.append(module.register_forward_hook(
                lambda _m, _i, _o, path=path: order.append(path) if path not in order else None))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in hooks:
            h.remove()
    return order


def pick(name: str, seed: int = 0) -> dict:
    spec = specs()[name]
    torch.manual_seed(seed)
    model = spec.build().eval()
    order = candidates(model, spec.inputs(seed))
    if not order:
        return {"error": "no module with its own non-zero weight runs in the forward"}
    index = round(DEPTH * (len(order) - 1))
    return {"layer": order[index], "candidates": len(order), "index": index}


def main(argv: list[str]) -> int:
    try:
        result = pick(argv[0])
    except ModuleNotFoundError as exc:
        needs = specs()[argv[0]].needs
        result = {"missing": needs} if exc.name == needs else {"error": f"ModuleNotFoundError: {exc}"}
    except Exception as exc:  # noqa: BLE001 - reported as the row's status
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0 if "layer" in result else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
