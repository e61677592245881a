"""``list`` and ``validate``: what a config expands to (in about the time of a config load: no user
module imported), and whether each model can be set up: its factory, input and transform references
import, its inputs build, and they are the inputs its baseline was recorded for (no model is built)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gate.commands.common import display, update_command
from gate.commands.judging import load_one
from gate.config import Config, ModelSpec
from gate.core.refs import resolve
from gate.errors import ConfigError, GateError
from gate.model import inputs as inputs_mod
from gate.pipeline.content_key import transform_inputs_digest


@dataclass
class Case:
    name: str
    base: str
    case: dict[str, Any]
    inputs: list[str]  # "x float32[2, 3, 16, 16]"
    export_group: int  # cases in one group share one export
    providers: list[str]


def _inputs(spec: ModelSpec) -> list[str]:
    if isinstance(spec.inputs, tuple):
        return [f"{i.name} {i.dtype}{list(i.shape)}" + (f" dynamic {dict(spec.dynamic_shapes[i.name])}"
                                                       if i.name in spec.dynamic_shapes else "")
                for i in spec.inputs]
    return [spec.inputs]


def cases(config: Config, models: tuple[ModelSpec, ...]) -> list[Case]:
    groups: dict[tuple[Any, ...], int] = {}
    return [Case(m.name, m.base or m.name, dict(m.case), _inputs(m), groups.setdefault(m.export_key, len(groups)),
                 [p.name + (f" ({p.precision})" if p.precision != "float32" else "") for p in config.providers])
            for m in models]


def _import_refs(config: Config, spec: ModelSpec) -> None:
    """Import what the config names for ``spec`` (ConfigError naming the key); nothing is called."""
    refs = [("factory", spec.factory if spec.sweep is None else None), ("transform", spec.transform),
            ("inputs", spec.inputs if isinstance(spec.inputs, str) and not spec.inputs.endswith(".npz") else None)]
    for key, ref in refs:
        if ref:
            resolve(ref, config.root, f"{spec.where}.{key}")
    transform_inputs_digest(spec, config.root)  # a glob matching no file: `check` refuses it too


def _arrays(spec: ModelSpec, budget_mb: int | None) -> tuple[list[str], list[np.ndarray]] | None:
    """The inputs ``check`` will run on: declared ones from their seed, an .npz file read; None for a
    callable (its inputs exist only once it runs)."""
    if isinstance(spec.inputs, tuple):
        from gate.model.budget import check_inputs  # torch: not for ``list``

        check_inputs(spec, budget_mb)  # refused before any is drawn, as ``check`` refuses it
        return [i.name for i in spec.inputs], inputs_mod.generate(spec.inputs, spec.seed)
    if not spec.inputs.endswith(".npz"):
        return None
    try:
        with np.load(spec.inputs, allow_pickle=False) as npz:
            return list(npz.files), [npz[n] for n in npz.files]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"`{spec.where}.inputs`: cannot read `{spec.inputs}` ({exc})") from None


@dataclass(frozen=True)
class Missing:
    """A configured case without a baseline: ``check`` fails it (exit 1) until it is recorded."""

    model: str
    path: Path
    command: str


@dataclass
class Validation:
    lines: list[str]  # one per case
    missing: list[Missing]
    refused: list[str] = field(default_factory=list)  # one line per case that cannot be checked, and why


def validate(config: Config, models: tuple[ModelSpec, ...]) -> Validation:
    """One line per case, the cases without a baseline, and one line for each that cannot be set up: a
    reference that does not import, inputs that cannot be built, or a baseline ``check`` would refuse (one
    damaged, another model's, or recorded for other inputs): every case is looked at, as ``check`` does."""
    out = Validation([], [])
    for spec in models:
        try:
            _validate_one(config, spec, out)
        except GateError as exc:
            named = str(exc).startswith(f"model `{spec.name}`")
            out.refused.append(str(exc) if named else f"model `{spec.name}`: {exc}")
    return out


def _validate_one(config: Config, spec: ModelSpec, out: Validation) -> None:
    _import_refs(config, spec)
    loaded = load_one(config, spec)
    if loaded.refused is not None:  # as ``check`` refuses it, with the step that fixes it
        repair = loaded.refused.repair
        fix = f"restore it with `{repair}`" if repair else f"re-create it with `{update_command(spec, config)}`"
        raise GateError(f"{loaded.refused.message}; `check` will refuse it: {fix}")
    path, baseline = loaded.path, loaded.baseline
    if baseline is None:
        out.missing.append(Missing(spec.name, path, update_command(spec, config)))
    built = _arrays(spec, config.isolation.memory_mb)
    if built is None:
        out.lines.append(f"{spec.name}: inputs from `{spec.inputs}` (a callable: built when the model runs)")
        return
    names, arrays = built
    bad = next((n for n, a in zip(names, arrays, strict=True)
                if a.dtype.kind == "f" and not np.isfinite(a).all()), None)
    if bad is not None:
        raise ConfigError(f"model `{spec.name}`: input `{bad}` contains NaN/Inf")
    digest = inputs_mod.digest(names, arrays)
    if baseline is not None and baseline.meta.inputs_digest not in (None, digest):
        dtypes = [i.dtype for i in spec.inputs] if isinstance(spec.inputs, tuple) else None
        how = inputs_mod.difference(baseline.meta.inputs, inputs_mod.describe(names, arrays, dtypes),
                                    spec.inputs)
        raise GateError(f"model `{spec.name}`: its declared inputs are not those baseline `{display(path)}` was "
                        f"recorded for{f' ({how})' if how else ''}; `check` will refuse it: re-create it with "
                        f"`{update_command(spec, config)}`")
    size = sum(a.nbytes for a in arrays)
    out.lines.append(f"{spec.name}: {len(arrays)} input(s), {size:,} bytes, digest {digest[:12]}"
                     + (", no baseline" if baseline is None else ", as its baseline"))
