"""A sweep's case as a module: the class constructed, or the function wrapped so it exports and hooks
like any model (its call is the model's one layer, ``output``). Targets are dotted paths
(``torch.nn.GELU``) or ``package.module:attribute``; an argument may be an object constructed,
``{ new = "torch.nn.ReLU", args = [], kwargs = {} }``, or looked up, ``{ ref = "torch.float64" }``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import torch

from gate.config import ModelSpec
from gate.core.failure import ModelError
from gate.core.refs import resolve
from gate.core.status import ErrorStatus
from gate.errors import ConfigError


class Op(torch.nn.Module):
    """``fn(*inputs, *args, **kwargs)`` as a module."""

    def __init__(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.fn(*inputs, *self.args, **self.kwargs)


def lookup(path: str, root: Path, where: str) -> Any:
    """``package.module:attr`` or a dotted path: the longest importable prefix, then attributes."""
    if ":" in path:
        return resolve(path, root, where, called=False)  # a `ref` may name a constant (a dtype)
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                raise ConfigError(f"`{where}`: `{'.'.join(parts[:cut])}` has no attribute `{attr}` (in `{path}`)")
            obj = getattr(obj, attr)
        return obj
    raise ConfigError(f"`{where}`: cannot import `{path}`")


def value(raw: Any, root: Path, where: str) -> Any:
    """A TOML argument as Python: ``{ new = ... }`` constructed, ``{ ref = ... }`` looked up."""
    if isinstance(raw, list):
        return [value(v, root, where) for v in raw]
    if not isinstance(raw, dict):
        return raw
    if set(raw) <= {"new", "args", "kwargs"} and "new" in raw:
        cls = lookup(raw["new"], root, where)
        return cls(*value(raw.get("args", []), root, where), **value(raw.get("kwargs", {}), root, where))
    if set(raw) == {"ref"}:
        return lookup(raw["ref"], root, where)
    return {k: value(v, root, where) for k, v in raw.items()}


def build_case(spec: ModelSpec, root: Path) -> torch.nn.Module:
    case = spec.sweep
    assert case is not None  # only a sweep's case is built here
    where = f"{spec.where}.{case.kind}"
    try:  # a case whose target is not there fails alone; the sweep's other cases run (docs/sweeps.md)
        target = lookup(case.target, root, where)
    except ConfigError as exc:
        raise ModelError(f"model `{spec.name}`: {exc}", ErrorStatus.BUILD_FAIL) from None
    try:
        args = tuple(value(list(case.args), root, f"{spec.where}.args"))
        kwargs = value(dict(case.kwargs), root, f"{spec.where}.kwargs")
        if case.kind == "op":
            if not callable(target):
                raise ConfigError(f"`{where}`: `{case.target}` is not callable")
            return Op(target, args, kwargs)
        module = target(*args, **kwargs)
    except (ConfigError, ModelError):
        raise
    except Exception as exc:  # a constructor that refuses this case's arguments is this case's failure
        raise ModelError.of(f"model `{spec.name}`: `{case.target}` raised {type(exc).__name__}: {exc}",
                            ErrorStatus.BUILD_FAIL, exc) from None
    if not isinstance(module, torch.nn.Module):
        raise ModelError(f"model `{spec.name}`: `{where}`: `{case.target}` built {type(module).__name__}, "
                         "not a torch.nn.Module", ErrorStatus.BUILD_FAIL)
    return module
