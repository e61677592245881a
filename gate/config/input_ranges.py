"""Integer inputs whose default range (0..99, ``INT_DEFAULT``) cannot be what the model reads: masks,
token types, positions, indices, timesteps, steps, classes, labels. Such names are recognised here,
once, and ``add``, ``init``, ``validate``, ``check`` and ``update-baseline`` say what range to give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gate.config.types import InputSpec, ModelSpec

INT_DEFAULT = (0, 100)  # integers ~ U{0..99} when the config gives no range
INT_DTYPES = ("int64", "int32", "int8", "uint8")

# (kind, pattern): checked in order on the lower-cased name; the first that matches decides.
_KINDS = (("mask", re.compile(r"mask")), ("token type", re.compile(r"token_?type|segment")),
          ("position", re.compile(r"position|(^|_)pos(_|$)|pos_?ids")),
          ("index", re.compile(r"ind(ex|ices)|(^|_)idx(s|es)?(_|$)")),
          ("timestep", re.compile(r"time_?steps?|^t$")), ("step", re.compile(r"(^|_)steps?(_|$)")),
          ("class", re.compile(r"class|(^|_)cls(_|$)")), ("label", re.compile(r"label|(^|_)targets?(_|$)")))


@dataclass(frozen=True)
class RangeAdvice:
    """``input`` of ``model`` is an integer ``kind`` drawn from the default range; ``[low, high)`` is
    the range to give (``high`` None: the size it indexes, which only the user knows)."""

    model: str
    input: str
    dtype: str
    shape: tuple[int, ...]
    kind: str
    low: int
    high: int | None

    def message(self) -> str:
        lo, hi = INT_DEFAULT
        bound = str(self.high) if self.high is not None else "N"
        why = {"mask": "a mask holds 0 and 1", "token type": "token types are 0 and 1 for most models",
               "position": f"positions run 0..{self.shape[-1] - 1 if self.shape else 'length-1'}",
               "index": "an index stays below the size it indexes (N)",
               "timestep": "a diffusion timestep runs 0..N-1 (N: the scheduler's num_train_timesteps, "
                           "1000 for most)",
               "step": "a step stays below the number of steps (N)",
               "class": "a class id stays below the number of classes (N)",
               "label": "a label stays below the number of labels (N)"}[self.kind]
        dims = "x".join(map(str, self.shape))
        return (f"model `{self.model}`: integer input `{self.input}` looks like a {self.kind} and takes the default "
                f"range {lo}..{hi - 1}, but {why}: give its range, `low = {self.low}, high = {bound}` in its "
                f"inputs (or --input '{self.input}={dims}:{self.dtype}[{self.low},{bound})'), then re-record its baseline")


def kind_of(name: str) -> str | None:
    lowered = name.lower()
    return next((kind for kind, pattern in _KINDS if pattern.search(lowered)), None)


def advice(model: str, spec: InputSpec) -> RangeAdvice | None:
    """Advice for one declared input, or None when its range is given or its name says nothing."""
    if spec.dtype not in INT_DTYPES or spec.low is not None or spec.high is not None:
        return None
    kind = kind_of(spec.name)
    if kind is None:
        return None
    high = {"mask": 2, "token type": 2, "position": spec.shape[-1] if spec.shape else None}.get(kind)
    return RangeAdvice(model, spec.name, spec.dtype, spec.shape, kind, 0, high)


def range_advice(models: tuple[ModelSpec, ...]) -> list[RangeAdvice]:
    """One per suspicious input of each configured model (once per model, not per expanded case)."""
    out, seen = [], set()
    for m in models:
        base = m.base or m.name
        if m.sweep is not None or not isinstance(m.inputs, tuple) or base in seen:
            continue
        seen.add(base)
        out += [a for a in (advice(base, i) for i in m.inputs) if a is not None]
    return out
