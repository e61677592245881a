"""``list`` and ``validate``: what a config expands to, and whether its inputs can be built, in
about the time of a config load (no model is built, no user module is imported)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gate.config import Config, ModelSpec
from gate.errors import ConfigError
from gate.model import inputs as inputs_mod


@dataclass
class Case:
    name: str
    base: str
    case: dict
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
    groups: dict[tuple, int] = {}
    return [Case(m.name, m.base or m.name, dict(m.case), _inputs(m), groups.setdefault(m.export_key, len(groups)),
                 [p.name + (f" ({p.precision})" if p.precision != "float32" else "") for p in config.providers])
            for m in models]


def validate(models: tuple[ModelSpec, ...]) -> list[str]:
    """Build every case's inputs (declared ones from their seed, .npz files read); one line per
    case, a ConfigError naming the model for the first that cannot be built."""
    lines = []
    for spec in models:
        if isinstance(spec.inputs, tuple):
            arrays = inputs_mod.generate(spec.inputs, spec.seed)
            names = [i.name for i in spec.inputs]
        elif spec.inputs.endswith(".npz"):
            try:
                with np.load(spec.inputs, allow_pickle=False) as npz:
                    names, arrays = list(npz.files), [npz[n] for n in npz.files]
            except (OSError, ValueError) as exc:
                raise ConfigError(f"`{spec.where}.inputs`: cannot read `{spec.inputs}` ({exc})") from None
        else:
            lines.append(f"{spec.name}: inputs from `{spec.inputs}` (a callable: built when the model runs)")
            continue
        bad = next((n for n, a in zip(names, arrays, strict=True)
                    if a.dtype.kind == "f" and not np.isfinite(a).all()), None)
        if bad is not None:
            raise ConfigError(f"model `{spec.name}`: input `{bad}` contains NaN/Inf")
        size = sum(a.nbytes for a in arrays)
        lines.append(f"{spec.name}: {len(arrays)} input(s), {size:,} bytes, digest "
                     f"{inputs_mod.digest(names, arrays)[:12]}")
    return lines
