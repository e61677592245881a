"""What moved between two baselines, in lines for ``update-baseline`` and for the text a reviewer reads of
a changed baseline (``gate.commands.baseline_diff``); ``noise`` is how far a recorded layer may move and be
the same numbers (``show`` rounds to it, so unchanged layers read the same)."""

from __future__ import annotations

import math

from gate.core.reexpressed import classify, only_moved
from gate.core.target import coarsest
from gate.fingerprint import relative_error

from .document import Baseline, Entry

GROWTH = 1.5  # an entry's error that grew past this factor is named
SLOWER = 2.0  # a recorded latency that grew past this factor is named: max-slowdown judges against it
# How far the reference moves between reruns of the same model: float64 is bit-identical on one machine and
# differs by ~1e-16 across CPUs; a reference that computed below float64 rounds at that precision.
NOISE = {"float64": 1e-10, "float32": 1e-6}
COARSE_NOISE = 1e-2  # float16, bfloat16
SAME = "; graph, weights and inputs the same"


def noise(reference_dtype: str, reached: str = "float64", calibrated: float | None = None) -> float:
    """The relative change of a layer of the reference that is still noise: its precision's, never under
    4x what ``update-baseline --calibrate`` measured for it."""
    return max(NOISE.get(reference_dtype, COARSE_NOISE), NOISE.get(reached, COARSE_NOISE),
               4 * (calibrated or 0.0))


def describe(old: Baseline | None, new: Baseline) -> list[str]:
    """Human lines: what moved and by how much ("no change" when nothing did)."""
    if old is None:
        return [f"new baseline: {_layers(len(new.layers))}, providers: "
                f"{', '.join(f'{e.target.provider} ({e.target.label})' for e in new.entries) or 'none'}"]
    lines = _layer_lines(old, new) + _loosened(old, new)
    for entry in new.entries:
        lines += _entry_lines(old.entry(entry.target), entry)
    return lines or ["no change"]


def limits_loosened(old: Baseline, new: Baseline) -> bool:
    """Whether ``new`` lets a check pass by more than ``old`` did, whatever the numbers: what ``describe``
    says as "limits loosened"."""
    pairs = [(b, e) for e in new.entries if (b := old.entry(e.target)) is not None]
    return bool(_loosened(old, new)) or any(_coarser(b, e) or _slower(b, e) for b, e in pairs)


def _coarser(before: Entry, entry: Entry) -> bool:
    old_p, new_p = before.precision or before.target.precision, entry.precision or entry.target.precision
    return coarsest(old_p, new_p) != old_p


def _slower(before: Entry, entry: Entry) -> bool:
    return bool(entry.latency_ms and before.latency_ms and entry.latency_ms > SLOWER * before.latency_ms)


def _loosened(old: Baseline, new: Baseline) -> list[str]:
    """What lets a check pass by more, whatever the numbers: a layer's calibrated noise grown (its limit is
    4x it), its precision or the reference's coarsened, a runtime layer's noise grown."""
    both = [(b, x) for x in new.layers if (b := old.layer(x.name)) is not None]
    noisier = [(x.name, b.noise, x.noise) for b, x in both if (x.noise or 0) > (b.noise or 0)]
    noisier += [(f"{e.target.provider} {name}", prior.noise, row.noise) for e in new.entries
                if (recorded := old.entry(e.target)) is not None for name, row in e.layers.items()
                if (prior := recorded.layers.get(name)) is not None and (row.noise or 0) > (prior.noise or 0)]
    coarser = [(x.name, b.reached, x.reached) for b, x in both if coarsest(b.reached, x.reached) != b.reached]
    if coarsest(old.reference_dtype, new.reference_dtype) != old.reference_dtype:
        coarser.insert(0, ("the reference", old.reference_dtype, new.reference_dtype))
    lines = []
    if noisier:
        first = noisier[0]
        lines.append(f"limits loosened: calibrated noise grew on {_layers(len(noisier))} (first: {first[0]}, "
                     f"{first[1] or 0:g} -> {first[2] or 0:g})")
    if coarser:
        layer = coarser[0]
        lines.append(f"limits loosened: precision coarsened on {_layers(len(coarser))} (first: {layer[0]}, "
                     f"{layer[1]} -> {layer[2]})")
    return lines


def _layer_lines(old: Baseline, new: Baseline) -> list[str]:
    lines = []
    pairs = renames(old, new)
    was, now = {a for a, _ in pairs}, {b for _, b in pairs}
    if pairs:
        lines.append(f"layers renamed: {len(pairs)} (first: {pairs[0][0]} -> {pairs[0][1]}), values the same")
    # a name whose values went to another (or came from one) and nothing took its place is added or removed
    added = [x.name for x in new.layers if x.name not in now and (old.layer(x.name) is None or x.name in was)]
    removed = [b.name for b in old.layers
               if b.name not in was and (new.layer(b.name) is None or b.name in now)]
    if added:
        lines.append(f"layers added: {len(added)} (first: {added[0]})")
    if removed:
        lines.append(f"layers removed: {len(removed)} (first: {removed[0]})")
    moved = [m for m in moved_layers(old, new) if m[1] not in now | was]
    if moved:
        first, worst = moved[0], max(moved)
        lines.append(f"reference moved on {_layers(len(moved))} (first: {first[1]} by {first[0]:.3g}, "
                     f"largest: {worst[1]} by {worst[0]:.3g}){_digests(old, new)}")
    else:  # what the numbers are a function of changed and none moved: said, never "no change"
        digests, keys = _digests(old, new), old.meta.content_key != new.meta.content_key
        if digests != SAME or keys:
            lines.append(f"no recorded value moved{'' if digests == SAME else digests}"
                         f"{'' if not keys else '; its stage keys changed'}")
    return lines


def _digests(old: Baseline, new: Baseline) -> str:
    """Which of what the reference is a function of changed: the graph (code), the weights, the inputs. The
    shipped graph holds the weights, so with new weights its digest moves whatever the code did: the graph is
    named only where its digest moved with the same weights, or its operation types changed. Weights that
    changed names and not values (a rename, a split) are said to be renamed; those whose values changed are
    named."""
    moved = {key: getattr(old.meta, key) != getattr(new.meta, key)
             for key in ("graph_digest", "weights_digest", "inputs_digest")}
    before, now = old.meta.tensor_digests, new.meta.tensor_digests
    # the tensors' digests where both sides have them: the whole digest's rule changed once (``weights.RULE``)
    weights = before != now if before and now else moved["weights_digest"]
    renamed = weights and only_moved(new.meta.tensor_digests or {}, old.meta.tensor_digests or {},
                                     new.meta.tensor_sums, old.meta.tensor_sums)
    code = moved["graph_digest"] and (not weights or old.meta.op_types != new.meta.op_types)
    tensors = "" if renamed or not weights else _tensors(old, new)
    known = [("graph", code), ("weights", weights and not renamed), ("inputs", moved["inputs_digest"])]
    changed = [word for word, c in known if c]
    same = [word for word, c in known if not c and not (word == "graph" and moved["graph_digest"])
            and not (word == "weights" and renamed)]
    said = "; weights renamed, their values the same" if renamed else ""
    if not changed:
        return said or SAME
    kept = f", {' and '.join(same)} the same" if same else ""
    return f"; {' and '.join(changed)} changed{tensors}{kept}{said}"


def _tensors(old: Baseline, new: Baseline, shown: int = 3) -> str:
    """" (tensor `fc.weight`)": the tensors whose values changed (a rename's are not), ``shown`` named."""
    now, before = new.meta.tensor_digests or {}, old.meta.tensor_digests or {}
    moved = classify(now, before, new.meta.tensor_sums, old.meta.tensor_sums).moved
    names = [n for n in {**now, **before} if now.get(n) != before.get(n) and n not in moved]
    if not names:
        return ""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f" (tensor{'s' * (len(names) != 1)} {', '.join(f'`{n}`' for n in names[:shown])}{more})"


def renames(old: Baseline, new: Baseline) -> list[tuple[str, str]]:
    """(old name, new name) of each layer of ``new`` that holds another name's values in ``old`` (its shape
    and reference within that layer's noise; of its type first, then of any: a container whose class
    changed), each old layer taken once: one rename, never a layer added and one removed. A name both have
    is a candidate where its reference moved: a module moved between parents, two layers swapped."""
    moved = {name for _, name in moved_layers(old, new)}
    news = [x for x in new.layers if old.layer(x.name) is None or x.name in moved]
    free = [b for b in old.layers if new.layer(b.name) is None or b.name in moved]
    pairs: list[tuple[str, str]] = []
    for typed in (True, False):
        for x in news:
            match = next((b for b in free if b.name != x.name and (b.type == x.type or not typed)
                          and tuple(b.fp.shape) == tuple(x.fp.shape)
                          and relative_error(x.fp, b.fp) <= noise(old.reference_dtype, b.reached, b.noise)),
                         None)
            if match is not None and all(n != x.name for _, n in pairs):
                pairs.append((match.name, x.name))
                free.remove(match)
    order = [x.name for x in new.layers]
    return sorted(pairs, key=lambda p: order.index(p[1]))


def moved_layers(old: Baseline, new: Baseline) -> list[tuple[float, str]]:
    """``(relative change, name)`` of each layer of both whose reference moved beyond its noise, in
    execution order (a changed shape: inf)."""
    moved = []
    for layer in new.layers:
        before = old.layer(layer.name)
        if before is None:
            continue
        if tuple(layer.fp.shape) != tuple(before.fp.shape):
            moved.append((math.inf, layer.name))
            continue
        change = relative_error(layer.fp, before.fp)
        if change > noise(old.reference_dtype, before.reached, before.noise):  # the new side's may be forged
            moved.append((change, layer.name))
    return moved


def _entry_lines(before: Entry | None, entry: Entry) -> list[str]:
    head = f"{entry.target.provider} ({entry.target.label})"
    if before is None:
        return [f"{head}: new entry"]
    lines = []
    old_p, new_p = before.precision or before.target.precision, entry.precision or entry.target.precision
    if new_p != old_p:  # what the entry's limits follow: never "no change"
        looser = "limits loosened: " if _coarser(before, entry) else ""
        lines.append(f"{head}: {looser}precision {old_p} -> {new_p}")
    grew, dropped = [], []
    for name, row in entry.layers.items():
        was = before.layers.get(name)
        e, b = row.err, None if was is None else was.err
        if e is not None and math.isnan(e):  # no limit holds it
            grew.append((math.inf, name))
        elif e is not None and b and e > b * GROWTH:
            grew.append((e / b, name))
        if was is not None and was.status != row.status and row.status != "ok":
            dropped.append((name, was.status, row.status))
    if dropped:
        name, status, now = dropped[0]
        lines.append(f"{head}: no longer compared on {_layers(len(dropped))} (first: {name}, {status} -> "
                     f"{now})")
    if grew:
        ratio, name = max(grew)
        lines.append(f"{head}: error grew >{GROWTH}x on {_layers(len(grew))} (most: {name}, {ratio:.2f}x)")
    if _slower(before, entry) and entry.latency_ms and before.latency_ms:  # (the types, narrowed)
        lines.append(f"{head}: limits loosened: recorded latency {before.latency_ms:.3g} -> "
                     f"{entry.latency_ms:.3g} ms ({entry.latency_ms / before.latency_ms:.1f}x), which "
                     "max-slowdown judges against")
    return lines


def _layers(n: int) -> str:
    return f"{n} layer{'s' * (n != 1)}"
