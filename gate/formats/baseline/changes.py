"""What moved between two baselines, in lines for ``update-baseline``."""

from __future__ import annotations

import math

from gate.fingerprint import relative_error

from .document import Baseline, Entry

GROWTH = 1.5  # an entry's error that grew past this factor is named


def describe(old: Baseline | None, new: Baseline) -> list[str]:
    """Human lines: what moved and by how much ("no change" when nothing did)."""
    if old is None:
        return [f"new baseline: {_layers(len(new.layers))}, providers: "
                f"{', '.join(f'{e.target.provider} ({e.target.label})' for e in new.entries) or 'none'}"]
    lines = _layer_lines(old, new)
    for entry in new.entries:
        lines += _entry_lines(old.entry(entry.target), entry)
    return lines or ["no change"]


def _layer_lines(old: Baseline, new: Baseline) -> list[str]:
    lines = []
    new_names = {x.name for x in new.layers}
    added = [x.name for x in new.layers if old.layer(x.name) is None]
    removed = [x.name for x in old.layers if x.name not in new_names]
    if added:
        lines.append(f"layers added: {len(added)} (first: {added[0]})")
    if removed:
        lines.append(f"layers removed: {len(removed)} (first: {removed[0]})")
    moved = []
    for layer in new.layers:
        before = old.layer(layer.name)
        if before is None:
            continue
        if tuple(layer.fp.shape) != tuple(before.fp.shape):
            moved.append((math.inf, layer.name))
            continue
        change = relative_error(layer.fp, before.fp)
        if change > 0:
            moved.append((change, layer.name))
    if moved:
        first, worst = moved[0], max(moved)
        lines.append(f"reference moved on {_layers(len(moved))} (first: {first[1]} by {first[0]:.3g}, "
                     f"largest: {worst[1]} by {worst[0]:.3g})")
    return lines


def _entry_lines(before: Entry | None, entry: Entry) -> list[str]:
    head = f"{entry.target.provider} ({entry.target.label})"
    if before is None:
        return [f"{head}: new entry"]
    grew = []
    for name, row in entry.layers.items():
        was = before.layers.get(name)
        e, b = row.err, None if was is None else was.err
        if e is not None and b not in (None, 0) and e > b * GROWTH:
            grew.append((e / b, name))
    if not grew:
        return []
    ratio, name = max(grew)
    return [f"{head}: error grew >{GROWTH}x on {_layers(len(grew))} (most: {name}, {ratio:.2f}x)"]


def _layers(n: int) -> str:
    return f"{n} layer{'s' * (n != 1)}"
