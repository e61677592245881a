"""What changed in a model's structure since its baseline: numbers decide, names follow
(docs/verdict.md#verdict). A new layer with a vanished one's fingerprint is that layer renamed; only a
value that identifies a layer matches (never an empty, all-zero or constant one, which zero-initialized
tables and masks share), and of several candidates only the one whose name ends as the layer's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gate.core.layers import is_output, module_of
from gate.core.runs import LayerInfo, ModelRun
from gate.core.spans import span
from gate.fingerprint import Fingerprint, Sketches, relative_error, within
from gate.formats.baseline import Baseline, BaselineLayer
from gate.verdict.drift import drift, order_move

Limit = Callable[[LayerInfo, BaselineLayer], float]  # how far the reference may move at a layer


@dataclass(frozen=True)
class Structure:
    renames: dict[str, str] = field(default_factory=dict)  # a layer -> the baseline layer it is
    new: tuple[str, ...] = ()  # new layers no baseline layer matches, in execution order
    gone: tuple[str, ...] = ()  # baseline layers nothing matches or compares against, in the baseline's order
    copies: dict[str, str] = field(default_factory=dict)  # a new layer -> a baseline layer holding its values
    moved: dict[str, Move] = field(default_factory=dict)  # layers that moved inside a module whose output holds
    taken: frozenset[str] = frozenset()  # modules whose baseline namesake a child of theirs is now: new

    def own(self, name: str) -> str:
        """The baseline layer ``name`` is compared as: its own, or the one the structure matched it to ("":
        none, its namesake's values being another layer's now)."""
        if name in self.taken:
            return ""
        return self.renames.get(name) or self.copies.get(name) or name

    def recorded(self, name: str) -> str:
        """The name the baseline knows ``name`` by (a layer that moved inside a module: the baseline layer
        whose values it now holds, where one does)."""
        move = self.moved.get(name)
        if name in self.taken:
            return ""
        return self.renames.get(name) or self.copies.get(name) or (move.now_as if move else None) or name


@dataclass(frozen=True)
class Move:
    """A layer whose value moved while the output of a module call around it holds: a refactor inside
    that module (a normalization folded into the layer before it, projections merged, a layer split)."""

    within: str | None  # the enclosing module call whose output holds (`block`, `(model)`); None: none does
    now_as: str | None = None  # the baseline layer whose values it now holds
    took: str | None = None  # the layer that now holds its baseline values
    rounded: bool = False  # it holds its own values within the rounding the enclosing output holds to
    merged: tuple[str, ...] = ()  # the baseline layers whose values it now computes together
    reshaped: bool = False  # it holds its own baseline values, in order, under another shape
    split: tuple[str, ...] = ()  # the new layers that compute its baseline values with it (a call split)

    def words(self, layer: str) -> str:
        if self.rounded:
            return f"{span(layer)} holds its own values within float32 rounding"
        if self.now_as:
            return f"{span(layer)}'s output is now {span(self.now_as)}'s"
        if self.took:
            return f"{span(layer)}'s former output is now {span(self.took)}'s"
        if self.merged:
            return f"{span(layer)} now computes {_listed(self.merged)}'s values together"
        if self.split:
            return f"{span(layer)} and {_listed(self.split)} now compute its baseline values in parts"
        if self.reshaped:
            return f"{span(layer)} holds its own values, in order, under another shape"
        return f"{span(layer)} computes values no baseline layer held"


def _listed(names: tuple[str, ...]) -> str:
    quoted = [span(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _key(fp: Fingerprint) -> tuple[Any, ...]:
    return tuple(fp.shape), fp.dtype, fp.nan, fp.posinf, fp.neginf


def identifies(fp: Fingerprint) -> bool:
    """Whether a value can tell one layer from another: not empty, all-zero, non-finite or constant
    (a zero-initialized table, a gate, a mask: such values are every such layer's)."""
    return fp.finite > 0 and fp.zero < fp.count and fp.min != fp.max


def same(now: Fingerprint, before: Fingerprint, limit: float) -> bool:
    """The same value: shape, dtype and NaN/Inf counts equal, moved (``drift``) within the reference's limit."""
    return (_key(now) == _key(before) and now.sketch is not None and before.sketch is not None
            and drift(now, before).value <= limit)


def _suffix(a: str, b: str) -> int:
    """How many trailing name parts two layer names share (``model.layer4.1`` and ``layer4.1``: 2)."""
    n = 0
    for x, y in zip(reversed(a.split(".")), reversed(b.split(".")), strict=False):
        if x != y:
            break
        n += 1
    return n


def by_name(name: str, candidates: list[BaselineLayer], kind: str | None = None) -> BaselineLayer | None:
    """Of candidates that share one value, the one whose name ends as ``name`` does, if exactly one; else
    the one of ``kind``'s type, if exactly one (a Sequential's last Linear, now `fc2`, is that Linear);
    else, where they are one value by construction (a module and the layers inside it that return its
    output), that module. Equal numbers never decide between layers."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    score = {g.name: _suffix(name, g.name) for g in candidates}
    best = max(score.values())
    winners = [g for g in candidates if score[g.name] == best]
    if best > 0 and len(winners) == 1:
        return winners[0]
    typed = [g for g in candidates if g.type == kind]
    if len(typed) == 1:
        return typed[0]
    outer = min(candidates, key=lambda g: len(module_of(g.name)))
    path = module_of(outer.name)
    inside = all(g is outer or module_of(g.name).startswith(path + ".") for g in candidates)
    return outer if inside else None


def structure(run: ModelRun, baseline: Baseline, limit: Limit) -> Structure:
    """Renames, copies, new and gone layers: a new name matches a free baseline layer (gone, or its name now
    another's) as a rename, else any as a copy; a known name whose values are a free layer's (a Dropout
    deleted shifts indices) is it renamed, never one compared under its own name (a no-op still fails); a
    wrapper of what it was is new (``_wrapped``); an output matches only an output whose name is gone."""
    now = {x.name for x in run.layers}
    displaced = {x.name for x in run.layers if (b := baseline.layer(x.name)) is not None
                 and not same(x.fp, b.fp, limit(x, b))}
    free = [g for g in baseline.layers if g.name not in now or g.name in displaced]
    by_key: dict[tuple[Any, ...], list[BaselineLayer]] = {}
    for g in baseline.layers:
        by_key.setdefault(_key(g.fp), []).append(g)
    free_names = {g.name for g in free}
    renames, copies, new, used = {}, {}, [], set()
    # A moved layer searches its key's layers (a weight change moves them all): sketches stacked once (on
    # first use), one NumPy pass a search, the exact distance only near a limit.
    stacks: dict[tuple[Any, ...], Sketches] = {}
    nearness: dict[str, dict[str, float]] = {}

    def find(layer: LayerInfo, pool: Iterable[BaselineLayer]) -> BaselineLayer | None:
        if not identifies(layer.fp):
            return None
        if layer.name not in nearness:
            key = _key(layer.fp)
            group = by_key.get(key, [])
            if group and key not in stacks:
                stacks[key] = Sketches([g.fp for g in group])
            ds = stacks[key].differences(layer.fp) if group else ()
            nearness[layer.name] = {g.name: float(d) for g, d in zip(group, ds, strict=True)}
        return by_name(layer.name, [g for g in pool if _holds(layer, g, nearness[layer.name][g.name],
                                                              limit(layer, g), now)], layer.type)

    for layer in run.layers:
        if layer.name not in displaced and baseline.layer(layer.name) is not None:
            continue
        candidates = by_key.get(_key(layer.fp), [])
        match = find(layer, (g for g in candidates if g.name in free_names and g.name not in used)) or \
            find(layer, (g for g in candidates if g.name in free_names))
        if match is not None and match.name not in used:
            renames[layer.name] = match.name
        elif match is not None or layer.name in displaced:
            if match is not None:
                copies[layer.name] = match.name
            # a displaced layer nothing matches keeps its name: compared as before, it fails where it moved
        elif (copy := find(layer, candidates)) is not None:
            copies[layer.name] = copy.name
        else:
            new.append(layer.name)
        if match is not None:
            used.add(match.name)
    taken = _wrapped(run, baseline, displaced, renames, copies, new, used)
    _kept(run, baseline, now, renames, new, used)
    _first_element(run, baseline, now, renames, new, used)
    _by_place(run, baseline, now, renames, new, used)
    compared = used | (now - set(renames) - set(copies) - taken)
    return Structure(renames, tuple(x.name for x in run.layers if x.name in taken or x.name in new),
                     tuple(g.name for g in free if g.name not in compared), copies, taken=frozenset(taken))


def _holds(layer: LayerInfo, g: BaselineLayer, near: float, limit: float, now: set[str]) -> bool:
    """Whether ``layer`` holds the values of another baseline layer ``g`` (``near``: their sketches'
    distance): an output only an output whose name is gone (outputs swapped: what ships changed)."""
    output = is_output(layer.name)
    return (g.name != layer.name and is_output(g.name) == output and not (output and g.name in now)
            and within(near, limit, partial(relative_error, layer.fp, g.fp))
            and order_move(layer.fp, g.fp)[0] <= limit)


def _wrapped(run: ModelRun, baseline: Baseline, displaced: set[str], renames: dict[str, str],
             copies: dict[str, str], new: list[str], used: set[str]) -> set[str]:
    """Modules wrapped with what followed them (a conv and its BatchNorm: the conv is `stem.0`, `stem` the
    pair's output): their namesakes' values are their own children's now, so they have nothing to be
    compared with. A child of the type and output shape its container had is the module it was, compared
    as such, where its own values changed too (a fault in the conv; a split's halves are not): added to
    ``renames``, taken from ``new``."""
    layers = {x.name: x for x in run.layers}
    for n in sorted(displaced - set(renames) - set(copies) - used):
        b = baseline.layer(n)
        if b is None or is_output(n) or layers[n].type == b.type:
            continue
        child = next((c for c in new if c.rpartition(".")[0] == n and layers[c].type == b.type
                      and _key(layers[c].fp) == _key(b.fp)), None)
        if child is not None:
            renames[child] = n
            new.remove(child)
            used.add(n)
    return {old for layer, old in renames.items() if layer.startswith(f"{old}.") and old in displaced
            and old not in renames and old not in copies and not is_output(old)}


def _kept(run: ModelRun, baseline: Baseline, now: set[str], renames: dict[str, str], new: list[str],
          used: set[str]) -> None:
    """A module renamed with a fault inside (`fc1` now `proj`, its weight changed): its values match no
    baseline layer, yet the one gone layer of its type and output shape whose own tensors are its own by
    name, one at least with the same values (the bias kept), is the module it was: compared as such, it
    fails where it changed, not at the unchanged layer after it. Added to ``renames``, taken from ``new``."""
    ours, theirs = run.meta.tensor_sums or {}, baseline.meta.tensor_sums or {}

    def own(module: str, sums: dict[str, str]) -> dict[str, str]:
        return {t.rpartition(".")[2]: v for t, v in sums.items() if t.rpartition(".")[0] == module}

    layers = {x.name: x for x in run.layers}
    gone = [g for g in baseline.layers if g.name not in now and g.name not in used and not is_output(g.name)]
    for n in [n for n in new if not is_output(n) and own(n, ours)]:
        mine = own(n, ours)
        fits = [g for g in gone if g.type == layers[n].type and _key(g.fp) == _key(layers[n].fp)
                and own(g.name, theirs).keys() == mine.keys()
                and any(own(g.name, theirs)[k] == v for k, v in mine.items())]
        if len(fits) == 1:
            renames[n] = fits[0].name
            new.remove(n)
            used.add(fits[0].name)
            gone.remove(fits[0])


def _first_element(run: ModelRun, baseline: Baseline, now: set[str], renames: dict[str, str], new: list[str],
                   used: set[str]) -> None:
    """A model output now the first element of what the forward returns (`(model)` now `(model)[0]`, an
    output added after it), or the reverse, is that output where shape and dtype agree: its place says so
    where its values moved with a change before it. Added to ``renames``, taken from ``new``."""
    layers = {x.name: x for x in run.layers}
    for n in [n for n in new if is_output(n)]:
        was = next((g for g in baseline.layers if g.name not in now and g.name not in used
                    and is_output(g.name) and f"{g.name}[0]" in (n, f"{n}[0]")), None)
        if was is not None and _key(was.fp)[:2] == _key(layers[n].fp)[:2]:
            renames[n] = was.name
            new.remove(n)
            used.add(was.name)


def _by_place(run: ModelRun, baseline: Baseline, now: set[str], renames: dict[str, str], new: list[str],
              used: set[str]) -> None:
    """Layers renamed with a fault before them (a block wrapped, shared or unshared, a weight in it off):
    their values match nothing, yet between two layers compared as before, the new layers and the gone ones,
    as many, of one type and output shape each in turn, are those layers in their place: compared as such,
    they follow the fault, not mark it new. Added to ``renames``, taken from ``new``."""
    order = {g.name: i for i, g in enumerate(baseline.layers)}
    taken = set(new) | set(renames)
    gone = [g for g in baseline.layers if g.name not in used and not is_output(g.name)
            and (g.name in taken or g.name not in now)]
    gaps: list[tuple[list[LayerInfo], int]] = [([], -1)]  # new layers, then the baseline layer before them
    for x in run.layers:
        was = renames.get(x.name) or (x.name if x.name not in taken and x.name in order else None)
        if was is not None and order[was] > gaps[-1][1]:
            gaps.append(([], order[was]))
        elif x.name in new and not is_output(x.name):
            gaps[-1][0].append(x)
    for (layers, start), (_, end) in zip(gaps, [*gaps[1:], ([], len(order))], strict=True):
        between = [g for g in gone if start < order[g.name] < end]
        if layers and len(layers) == len(between) and all(
                x.type == g.type and _key(x.fp)[:2] == _key(g.fp)[:2] for x, g in zip(layers, between, strict=True)):
            for x, g in zip(layers, between, strict=True):
                renames[x.name] = g.name
                new.remove(x.name)
                used.add(g.name)


def described(st: Structure) -> list[str]:
    """What the report says of a structure change (audits at warn): renames, and what is no longer
    compared, with the command that records the new layers."""
    out = []
    if st.renames:
        shown = ", ".join(f"{old} → {new}" for new, old in list(st.renames.items())[:5])
        more = f" and {len(st.renames) - 5} more" if len(st.renames) > 5 else ""
        out.append(f"{len(st.renames)} layer{'s' * (len(st.renames) != 1)} renamed since the baseline ({shown}{more}): "
                   "compared as the baseline's layers")
    if st.copies:
        shown = ", ".join(f"{new} = {old}" for new, old in list(st.copies.items())[:3])
        more = f" and {len(st.copies) - 3} more" if len(st.copies) > 3 else ""
        out.append(f"{len(st.copies)} layer{'s' * (len(st.copies) != 1)} hold{'s' * (len(st.copies) == 1)} the "
                   f"values of another baseline layer ({shown}{more}): compared as that layer")
    if st.moved:
        moved = [(n, m) for n, m in st.moved.items() if not m.rounded]
        shown = "; ".join(m.words(n) + (f" (inside {span(m.within)})" if m.within else "") for n, m in moved[:4])
        more = f"; and {len(moved) - 4} more" if len(moved) > 4 else ""
        rounded = len(st.moved) - len(moved)
        rounding = f"; {rounded} layer{'s' * (rounded != 1)} within float32 rounding of {'their' if rounded != 1 else 'its'} " \
            "own values" if rounded else ""
        out.append(f"{len(st.moved)} layer{'s' * (len(st.moved) != 1)} moved as a refactor moves values: "
                   f"{shown or 'none past rounding'}{more}{rounding}. `update-baseline` records "
                   "them as they are now")
    unmatched = [n for n in (*st.new, *st.gone) if not is_output(n)]
    if unmatched:
        n, g = len(st.new), len(st.gone)
        what = (f"{n} new layer{'s' * (n != 1)} ({_few(st.new)}) and {g} gone ({_few(st.gone)}) since the "
                "baseline are" if st.new and st.gone else
                f"{n} new layer{'s' * (n != 1)} since the baseline ({_few(st.new)}) {'is' if n == 1 else 'are'}"
                if st.new else
                f"{g} layer{'s' * (g != 1)} gone since the baseline ({_few(st.gone)}) {'is' if g == 1 else 'are'}")
        out.append(f"the model's structure changed: {what} not compared; "
                   "every layer that remains is"
                   + (". `update-baseline` records the new ones" if st.new else
                      ". `update-baseline` drops the gone ones"))
    return out


def _few(names: tuple[str, ...]) -> str:
    return ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
