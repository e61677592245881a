"""A configured model expands into cases: the cartesian product of batch sizes, sequence lengths, input
shape sets, input sets and opsets (numerics differ between shapes, inputs and opsets). Cases are named
``<name>.b<batch>.t<length>.c<shapes>.s<set>.o<opset>`` (set axes only) with the configured name as
``base``: ``--model NAME`` selects them all, and cases differing only in dynamic dimensions share one
export.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from gate.config.reader import Reader
from gate.config.types import ModelSpec
from gate.core.names import MAX_MODEL_NAME


def _ints(r: Reader, key: str, low: int = 1) -> list[int] | None:
    values: list[int] | None = r.get(key, (list,), None)
    if values is None:
        return None
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low for v in values):
        what = "positive integers" if low == 1 else f"integers >= {low}"
        r.fail(r.key(key), f"expected an array of {what}, got {values!r}")
    if len(set(values)) != len(values):
        r.fail(r.key(key), f"{'a batch size' if key == 'batch-sizes' else 'a value'} is listed twice")
    return values


def _shape_sets(r: Reader, base: ModelSpec) -> list[dict[str, list[int]]] | None:
    raw = r.get("input-shapes", (list,), None)
    if raw is None:
        return None
    if not isinstance(base.inputs, tuple):  # an input callable: ``_axes`` refuses the shapes
        return []
    ranks = {i.name: len(i.shape) for i in base.inputs}
    out: list[dict[str, list[int]]] = []
    for k, table in enumerate(raw):
        t = r.child(table, r.item("input-shapes", k))
        for name, shape in t.table.items():
            if name not in ranks:
                t.fail(t.key(name), f"no declared input is named `{name}`")
            if not isinstance(shape, list) or len(shape) != ranks[name] or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                t.fail(t.key(name), f"expected {ranks[name]} non-negative integers (the rank of `{name}`), "
                       f"got {shape!r}")
        out.append(dict(t.table))
    if not out:
        r.fail(r.key("input-shapes"), "no shapes listed")
    return out


def _axes(r: Reader, base: ModelSpec) -> dict[str, list[Any]]:
    axes: dict[str, list[Any] | None] = {
        "batch": _ints(r, "batch-sizes"), "length": _ints(r, "sequence-lengths"),
        "shapes": _shape_sets(r, base), "opset": _ints(r, "opsets", low=7)}
    declared = isinstance(base.inputs, tuple)
    for axis, key in (("batch", "batch-sizes"), ("length", "sequence-lengths"), ("shapes", "input-shapes")):
        if axes[axis] is not None and not declared:
            r.fail(r.key(key), "needs declared inputs (it sets their dimensions)")
    if axes["shapes"] is not None and (axes["batch"] or axes["length"]):
        r.fail(r.key("input-shapes"), "cannot be combined with batch-sizes or sequence-lengths")
    if axes["opset"] is not None and "opset" in r.table:
        r.fail(r.key("opsets"), "cannot be combined with opset")
    if axes["opset"] is not None and any(not 7 <= o <= 30 for o in axes["opset"]):
        r.fail(r.key("opsets"), "opsets are out of range (7-30)")
    sets: int = r.get("input-sets", (int,), 1)
    if sets < 1 or sets > 64:
        r.fail(r.key("input-sets"), f"expected 1 to 64 input sets, got {sets}")
    axes["set"] = list(range(sets)) if sets > 1 else None
    return {axis: values for axis, values in axes.items() if values is not None}


_SUFFIX = {"batch": "b", "length": "t", "shapes": "c", "set": "s", "opset": "o"}


def _case(base: ModelSpec, values: dict[str, Any]) -> ModelSpec:
    inputs = base.inputs
    if isinstance(inputs, tuple) and ("batch" in values or "length" in values or "shapes" in values):
        sized = []
        for spec in inputs:
            shape = list(spec.shape)
            if "batch" in values and shape:
                shape[0] = values["batch"]
            if "length" in values and len(shape) >= 2:
                shape[1] = values["length"]
            if "shapes" in values and spec.name in values["shapes"][1]:
                shape = list(values["shapes"][1][spec.name])
            sized.append(replace(spec, shape=tuple(shape)))
        inputs = tuple(sized)
    suffix = "".join(f".{_SUFFIX[a]}{v[0] if a == 'shapes' else v}" for a, v in values.items())
    case = tuple((a, v[0] if a == "shapes" else v) for a, v in values.items())
    return replace(base, name=base.name + suffix, inputs=inputs, seed=base.seed + values.get("set", 0),
                   factory_seed=base.seed, opset=values.get("opset", base.opset), base=base.name, case=case)


def expand(r: Reader, base: ModelSpec) -> list[ModelSpec]:
    axes = _axes(r, base)
    if not axes:
        return [replace(base, base=base.name)]
    order = [a for a in ("batch", "length", "shapes", "set", "opset") if a in axes]
    choices = [list(enumerate(axes[a])) if a == "shapes" else axes[a] for a in order]
    out = []
    for combo in itertools.product(*choices):
        case = _case(base, dict(zip(order, combo, strict=True)))
        if len(case.name) > MAX_MODEL_NAME:
            r.fail(r.key("name"), f"case name `{case.name}` is longer than {MAX_MODEL_NAME} characters")
        out.append(case)
    return out
