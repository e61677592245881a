"""Turn a ``ModelRun`` into a baseline document, merging with the previous one, and say what
moved.

``update-baseline`` rewrites the reference and the entries of the targets that ran here;
entries of other providers and device classes are kept while the layers still match.
"""

from __future__ import annotations

import math
from typing import Any

from gate.core.runs import ModelRun
from gate.fingerprint import Fingerprint, relative_error

from .schema import FORMAT, VERSION


def to_document(run: ModelRun, previous: dict | None = None) -> dict[str, Any]:
    names = {layer.name for layer in run.layers}
    providers: dict[str, dict[str, Any]] = {}
    if previous is not None and _same_layers(previous, names):
        # Entries of providers/devices not run here survive only while the layers still match.
        for pname, devices in previous.get("providers", {}).items():
            providers[pname] = dict(devices)
    for prun in run.providers:
        if prun.status != "ok":
            continue
        label = prun.target.label
        before = providers.get(prun.name, {}).get(label, {})
        providers.setdefault(prun.name, {})[label] = {
            "precision": prun.precision,
            "latency_ms": _steady(prun.latency_ms, before.get("latency_ms")),
            "placement": prun.placement,
            **({"session_options": prun.session_options} if prun.session_options else {}),
            **({"numerics": prun.numerics} if prun.numerics else {}),
            "layers": {
                layer.name: _provider_layer(prun.layers.get(layer.name)) for layer in run.layers
                if layer.name in prun.layers
            },
        }
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": run.name,
        "meta": run.meta.to_dict(),
        "reference": {"device": "cpu", "dtype": run.reference_dtype},
        "layers": [_layer(layer) for layer in run.layers],
        "providers": providers,
    }


LATENCY_BAND = 2.0


def _steady(now: float | None, before: float | None) -> float | None:
    """Keep the recorded latency while a new measurement stays within a factor of 2 of it
    (sub-millisecond timings on a shared runner move that much), so rerunning update-baseline
    on an unchanged model rewrites the same bytes. A run that timed nothing (result files
    collected without ``max-slowdown``) keeps the recorded value."""
    if now is None:
        return before
    if before is None or not before > 0:
        return now
    return before if 1 / LATENCY_BAND <= now / before <= LATENCY_BAND else now


def _provider_layer(pl) -> dict[str, Any]:
    out = {"status": pl.status, "err": None if pl.err is None else float(pl.err),
           "fp": pl.fp.to_dict(sketch=False) if pl.fp is not None else None}
    if pl.noise is not None:
        out["noise"] = float(pl.noise)
    return out


def _layer(layer) -> dict[str, Any]:
    out = {"name": layer.name, "type": layer.type, "fp": layer.fp.to_dict(sketch=True)}
    if layer.noise is not None:
        out["noise"] = float(layer.noise)
    if layer.reached != "float64":
        out["reached"] = layer.reached
    return out


def _same_layers(doc: dict, names: set[str]) -> bool:
    return {layer["name"] for layer in doc.get("layers", [])} == names


def describe_changes(old: dict | None, new: dict) -> list[str]:
    """Human lines for ``update-baseline``: what moved and by how much."""
    if old is None:
        return [f"new baseline: {len(new['layers'])} layers, providers: "
                f"{', '.join(f'{p} ({d})' for p, devs in new['providers'].items() for d in devs) or 'none'}"]
    lines = []
    old_layers = {layer["name"]: layer for layer in old["layers"]}
    new_names = [layer["name"] for layer in new["layers"]]
    added = [n for n in new_names if n not in old_layers]
    removed = [n for n in old_layers if n not in set(new_names)]
    if added:
        lines.append(f"layers added: {len(added)} (first: {added[0]})")
    if removed:
        lines.append(f"layers removed: {len(removed)} (first: {removed[0]})")
    moved = []
    for layer in new["layers"]:
        before = old_layers.get(layer["name"])
        if before is None:
            continue
        a, b = Fingerprint.from_dict(layer["fp"]), Fingerprint.from_dict(before["fp"])
        if tuple(a.shape) != tuple(b.shape):
            moved.append((math.inf, layer["name"]))
            continue
        change = relative_error(a, b)
        if change > 0:
            moved.append((change, layer["name"]))
    if moved:
        first = moved[0]
        worst = max(moved)
        lines.append(f"reference moved on {len(moved)} layers (first: {first[1]} by {first[0]:.3g}, "
                     f"largest: {worst[1]} by {worst[0]:.3g})")
    for pname, devices in new["providers"].items():
        for dev, entry in devices.items():
            before = old.get("providers", {}).get(pname, {}).get(dev)
            if before is None:
                lines.append(f"{pname} ({dev}): new entry")
                continue
            grew = [(entry["layers"][n]["err"], before["layers"].get(n, {}).get("err"), n) for n in entry["layers"]]
            grew = [(e / b, n) for e, b, n in grew if e is not None and b not in (None, 0) and e > b * 1.5]
            if grew:
                ratio, name = max(grew)
                lines.append(f"{pname} ({dev}): error grew >1.5x on {len(grew)} layers (most: {name}, {ratio:.2f}x)")
    return lines or ["no change"]
