"""Refactors inside a module: a layer whose float64 value moved is a *move*, reported and not failed,
where the output of a module call around it holds and that module's own code changed before it
(docs/verdict.md#verdict, "Numbers decide across modules"). Where a change after it moves every call
around it, a layer moves on evidence of its own (``_onward``).

Weights folded in float32 are rounded to float32: the module's float64 output then moves by a few 1e-8,
far past the reference's 1e-9, so where a re-expression computed new weights (``reexpression``: a fold)
an output also holds within what float32 moves it by (``rounding``, the ``seal``), whatever a provider's
floor says; one that only moved values (a split, a merge) has no rounding, and one that kept its count
but not its values changed weights. Code alone moves float64 values by ~1e-16: where only code changed,
the call's outputs hold within ``tight`` (checks.CODE_SEAL), and a kept tensor whose values changed is a
weight change unless its module's values went somewhere known (a fold's conv, a merge's projection). A
change that flows on through a module whose tensors did not change is no move (``carries``): a
contracting network fades a weight fault below any limit by its outputs.
"""
from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable

from gate.core.layers import ROOT, is_gradient, is_output, module_of
from gate.core.runs import LayerInfo, ModelRun
from gate.formats.baseline import Baseline, BaselineLayer
from gate.verdict.reexpression import code_changed, modules_changed, reexpression
from gate.verdict.structure import Limit, Move, Structure, by_name, identifies, same
from gate.verdict.unions import union_of

FOLD_ROUNDING = 1e-6  # where no float32 run was recorded: a few 1e-8 a layer, grown through the layers after
FOLD_FLOOR = 1e-7  # about one float32 rounding: what a layer float32 computes exactly may still move by
FOLD_CAP = 1e-5  # float32 ruined by a cancellation in the forward (3e-4) is no budget for a fold's weights


def rounding(baseline: Baseline) -> Callable[[str], float]:
    """What weights computed anew in float32 may move a baseline layer's float64 value by: the largest error
    of the float32 torch-cpu run up to there, as its baseline recorded it (the same float32 roundings, met
    once more; a pooled layer averages the run's own away, not a weight's), at most ``FOLD_CAP``;
    ``FOLD_ROUNDING`` where none was recorded."""
    entry = next((e for e in baseline.entries_of("torch-cpu") if e.target.precision == "float32"), None)
    if entry is None:
        return lambda _: FOLD_ROUNDING
    errors, most = {}, FOLD_FLOOR
    for layer in baseline.layers:
        recorded = entry.layers.get(layer.name)
        if recorded is not None and recorded.err is not None and math.isfinite(recorded.err):
            most = max(most, recorded.err)
        errors[layer.name] = min(most, FOLD_CAP)
    return lambda layer: errors.get(layer, FOLD_ROUNDING)


def call_of(layer: str) -> str:
    """The call a layer is an element of: ``attn#2[0]`` -> ``attn#2``."""
    return layer.split("[", 1)[0]


def enclosing(module: str) -> list[str]:
    """The modules around ``module``, innermost first, the model last: ``a.b.c`` -> ``a.b``, ``a``, ``(model)``."""
    parts = module.split(".")
    return [] if module == ROOT else [".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)] + [ROOT]


class _Calls:
    """Where each module's calls end in execution order (a call's elements are recorded together,
    after every layer inside it)."""

    def __init__(self, layers: list[LayerInfo]):
        self.layers = layers
        self.starts: dict[str, list[int]] = {}
        for i, x in enumerate(layers):
            if is_gradient(x.name) or (i and call_of(layers[i - 1].name) == call_of(x.name)):
                continue
            self.starts.setdefault(module_of(x.name), []).append(i)

    def after(self, module: str, index: int) -> tuple[int, list[LayerInfo]]:
        """The index of the first element of ``module``'s first call that ends after layer ``index``,
        and its elements: the call around it."""
        ends = self.starts.get(module, [])
        k = bisect.bisect_right(ends, index)
        return (ends[k], self.elements(ends[k])) if k < len(ends) else (index, [])

    def begun(self, module: str, index: int) -> int:
        """The index of the last element of ``module``'s call before the one around layer ``index`` (-1:
        none): the layers of that call come after it."""
        ends = self.starts.get(module, [])
        k = bisect.bisect_right(ends, index)
        return ends[k - 1] if k else -1

    def elements(self, first: int) -> list[LayerInfo]:
        key = call_of(self.layers[first].name)
        out = []
        for x in self.layers[first:]:
            if call_of(x.name) != key:
                break
            out.append(x)
        return out

    def start(self, index: int) -> int:
        key = call_of(self.layers[index].name)
        while index and call_of(self.layers[index - 1].name) == key:
            index -= 1
        return index


def _within(module: str, around: str) -> bool:
    return around == ROOT or module == around or module.startswith(around + ".")


class _Code:
    """Where the model's code changed: per module where both sides digest it (``Meta.module_code``), else
    the model's as a whole (``code_changed``)."""

    def __init__(self, run: ModelRun, baseline: Baseline):
        self.anywhere = code_changed(run, baseline)
        self.re = reexpression(run, baseline)
        self.one_sided = self.re.one_sided
        self.changed = modules_changed(run, baseline)
        self._first: dict[str, int] = {ROOT: 0}  # module -> the index of the first layer inside it
        for i, x in enumerate(run.layers):
            parts = module_of(x.name).split(".")
            for k in range(len(parts), 0, -1):
                self._first.setdefault(".".join(parts[:k]), i)
        # where the first re-expressed tensor's module (or the nearest one around it that runs) begins
        owners = [t.rpartition(".")[0] or ROOT for t in self.one_sided & self.re.computed]
        self._reexpressed = min((self._first[next(m for m in (o, *enclosing(o)) if m in self._first)]
                                 for o in owners), default=None)

    def rounds_before(self, index: int) -> bool:
        """Whether weights were re-expressed (tensors gone or new) by layer ``index``: only then does it
        inherit float32 rounding. Where a side did not record its tensors: wherever code changed."""
        if not self.one_sided or self.changed is None:
            return self.ran_before(index, ROOT)
        return self._reexpressed is not None and self._reexpressed <= index

    def ran_before(self, index: int, around: str) -> bool:
        """Whether code changed inside module ``around`` (the model: ``ROOT``) by layer ``index``."""
        if self.changed is None:
            return self.anywhere
        return any(_within(m, around) and self._first.get(m, 0 if m == ROOT else index + 1) <= index
                   for m in self.changed)

    def covers(self, tensor: str, accounted: set[str]) -> bool:
        """Whether changed code re-expressed a tensor: gone or new in a module whose code changed (a fold
        leaves the BatchNorm's behind; unknown per module: where the code changed at all), or held on both
        sides by a module whose layer's values went somewhere known (``accounted``: a fold's conv, a merge's
        projection). Any other tensor whose values changed is a weight change, whatever code changed
        around it: digests cannot tell a constant folded into a kept weight from a fault."""
        owner = tensor.rpartition(".")[0] or ROOT
        if tensor in self.re.changed or tensor in self.re.moved:
            return tensor in self.re.moved  # only moved; else as many values, not the same: weights changed
        if tensor not in self.one_sided:
            return owner in accounted
        if self.changed is None:
            return self.anywhere
        return any(_holds(m, owner) for m in self.changed)

    def recomputes(self, module: str) -> bool:
        """Whether ``module``'s own code changed without re-expressing any tensor in it: what it computes
        changed, so its float32-sized drift is its own, not inherited rounding."""
        return self.changed is not None and module in self.changed and \
            not any(_within(t.rpartition(".")[0] or ROOT, module) for t in self.one_sided)


def _holds(module: str, owner: str) -> bool:
    return owner == module if module == ROOT else owner == module or owner.startswith(module + ".")


def changed_tensors(run: ModelRun, baseline: Baseline, layer: str) -> list[str]:
    """The tensors of ``layer``'s module's data (and of the modules inside it) whose digest
    changed since the baseline, or that one side lacks."""
    now, before = run.meta.tensor_digests or {}, baseline.meta.tensor_digests or {}
    if not now or not before:
        return []
    module = module_of(layer)
    prefix = "" if module == ROOT else module + "."
    return [n for n in {**before, **now} if n.startswith(prefix) and now.get(n) != before.get(n)]


class _Judge:
    def __init__(self, run: ModelRun, baseline: Baseline, st: Structure, limit: Limit, seal: Limit,
                 tight: Limit):
        self.run, self.baseline, self.st, self.limit, self.seal_limit, self.tight = run, baseline, st, limit, seal, tight
        self._carried: list[int] | None = None
        self._tensors: dict[str, list[str]] = {}  # module -> the tensors it holds
        self._changed: dict[str, list[str]] = {}  # module -> its tensors that changed
        self.accounted: set[str] = set()  # modules a layer of which moved its values somewhere known
        self.code = _Code(run, baseline)

    def recorded(self, layer: LayerInfo) -> BaselineLayer | None:
        return self.baseline.layer(self.st.own(layer.name))

    def holds(self, layer: LayerInfo, held: bool = True, limit: Limit | None = None) -> bool:
        """Its value is its baseline layer's (``held`` False: is not), within the limit a module's output
        holds to; never where either side's shape depends on values."""
        b = self.recorded(layer)
        return (b is not None and layer.data_dependent is None and b.data_dependent is None
                and same(layer.fp, b.fp, (limit or self.seal_limit)(layer, b)) == held)

    def moved(self, layer: LayerInfo) -> bool:
        """Its value moved in a way a refactor can move it: past the limit or to another shape, with the
        NaN/Inf counts of its baseline layer."""
        b = self.recorded(layer)
        if b is None or is_gradient(layer.name) or layer.data_dependent is not None:
            return False
        nonfinite = (layer.fp.nan, layer.fp.posinf, layer.fp.neginf) == (b.fp.nan, b.fp.posinf, b.fp.neginf)
        return nonfinite and not same(layer.fp, b.fp, self.limit(layer, b))

    def seal(self, call: list[LayerInfo]) -> bool:
        held = all(self.holds(x, limit=self.tight) for x in call)
        return bool(call) and held and any(identifies(x.fp) for x in call)

    def reshaped(self, layer: LayerInfo) -> bool:
        """Its baseline values in order under another shape (tokens flattened around a Linear)."""
        b = self.recorded(layer)
        return (b is not None and b.fp.count == layer.fp.count and not layer.data_dependent
                and same(dataclasses.replace(layer.fp, shape=b.fp.shape), b.fp, self.seal_limit(layer, b)))

    def strays(self, layer: LayerInfo) -> bool:
        """Not its baseline layer's value, nor reshaped (a refactor's doing, not a change passed on)."""
        return not is_gradient(layer.name) and self.holds(layer, held=False) and not self.reshaped(layer)

    def carried(self, calls: _Calls, first: int, end: int) -> bool:
        """Whether a layer in ``[first, end)`` carries a change on (``carries``)."""
        if self._carried is None:  # counted once per run: a prefix sum over execution order
            self._carried = [0]
            for k in range(len(self.run.layers)):
                self._carried.append(self._carried[-1] + self.carries(k, calls))
        return self._carried[max(end, first)] > self._carried[first]

    def carries(self, index: int, calls: _Calls) -> bool:
        """The layer passes on a change it was handed: its value and its input's (the layer before its
        call) stray, and its module holds tensors none of which changed. A module output that holds
        after such a layer holds because the change faded on the way (a contracting network), not
        because the values moved back: it is no evidence of a refactor."""
        layer, start = self.run.layers[index], calls.start(index)
        if not start or not self.strays(layer) or not self.strays(self.run.layers[start - 1]):
            return False
        return bool(self.tensors(module_of(layer.name))) and not self.own_changed(layer) and \
            not any(self.regrouped(layer))

    def tensors(self, module: str) -> list[str]:
        """The tensors of ``module``'s data (and of the modules inside it), on either side."""
        now, before = self.run.meta.tensor_digests, self.baseline.meta.tensor_digests
        if not now or not before:
            return []
        if module not in self._tensors:
            prefix = "" if module == ROOT else module + "."
            self._tensors[module] = [n for n in {**before, **now} if n.startswith(prefix)]
        return self._tensors[module]

    def own_changed(self, layer: LayerInfo) -> list[str]:
        """The layer's own tensors (its module's) whose digest changed, or that one side lacks."""
        if module_of(layer.name) not in self._changed:
            self._changed[module_of(layer.name)] = changed_tensors(self.run, self.baseline, layer.name)
        return self._changed[module_of(layer.name)]

    def regrouped(self, layer: LayerInfo) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Its module's calls batched into one, or one call split into several: the baseline calls whose
        values its one call now computes together (its own among them), or the new calls that compute its
        baseline values with it. Its values are its baseline's, grouped anew: no change passed on."""
        own, module = self.recorded(layer), module_of(layer.name)
        if own is None or is_output(layer.name) or not identifies(layer.fp):
            return (), ()
        gone = (g for g in map(self.baseline.layer, self.st.gone) if g and module_of(g.name) == module)
        parts = [own, *gone]
        limit = max(self.seal_limit(layer, p) for p in parts)
        if parts[1:] and union_of(layer.fp, [p.fp for p in parts], limit):
            return tuple(p.name for p in parts), ()
        new = [x for x in self.run.layers if module_of(x.name) == module and x.name in self.st.new]
        if new and union_of(own.fp, [layer.fp, *(x.fp for x in new)], self.seal_limit(layer, own)):
            return (), tuple(x.name for x in new)
        return (), ()

    def merged(self, layer: LayerInfo) -> tuple[str, ...]:
        """The baseline layers whose values ``layer`` now computes together: its own and the gone layers
        of the modules beside it, where the count and moments of their union are its own (a merge)."""
        own = self.baseline.layer(self.st.own(layer.name))
        parent = module_of(layer.name).rpartition(".")[0]
        gone = [g for g in (self.baseline.layer(n) for n in self.st.gone)
                if g is not None and module_of(g.name).rpartition(".")[0] == parent and not is_output(g.name)]
        parts = ([own] if own is not None else []) + gone
        if len(parts) < 2 or not identifies(layer.fp):
            return ()
        limit = max(self.seal_limit(layer, p) for p in parts)
        return tuple(p.name for p in parts) if union_of(layer.fp, [p.fp for p in parts], limit) else ()


def inside(run: ModelRun, baseline: Baseline, st: Structure, limit: Limit, seal: Limit | None = None,
           tight: Limit | None = None) -> dict[str, Move]:
    """The layers that moved (past ``limit``) inside a module call whose output holds (within ``tight``, by
    default ``seal``, by default ``limit``), each with the innermost such call and where its values went."""
    judge, calls = _Judge(run, baseline, st, limit, seal or limit, tight or seal or limit), _Calls(run.layers)
    out: dict[str, Move] = {}
    failed: list[int] = []  # layers that moved and are no move: they fail

    def after_failure(module: str, index: int) -> bool:
        """Whether a layer of ``module``'s call around ``index`` failed before it: the call's output holds
        by fading or by chance, and what moves after that failure is the same cause, never a refactor."""
        begun = calls.begun(module, index)
        return any(begun < f and _within(module_of(run.layers[f].name), module) for f in failed)

    for i, layer in enumerate(run.layers):
        if not judge.moved(layer):
            continue
        move = None
        if is_output(layer.name):  # what ships moves only within the rounding the model's outputs hold to
            call = calls.elements(calls.start(i))
            if judge.holds(layer) and judge.seal(call) and not after_failure(ROOT, i):
                move = _move(layer, i, ROOT, call_of(layer.name), judge)
        else:
            for module in enclosing(module_of(layer.name)):
                end, call = calls.after(module, i)
                if judge.carried(calls, i, end):
                    break  # the change flowed on through unchanged modules: it fails where it first moved
                if judge.seal(call):
                    if not after_failure(module, i):
                        move = _move(layer, i, module, call_of(call[0].name), judge)
                    break
        if move is None and not is_output(layer.name) and not after_failure(ROOT, i):
            move = _onward(layer, i, judge)
        if move is None:
            failed.append(i)
        else:
            out[layer.name] = move
            if move.now_as or move.took or move.merged:
                judge.accounted.add(module_of(layer.name))
    return out


def _move(layer: LayerInfo, index: int, module: str, within: str | None, judge: _Judge) -> Move | None:
    """The move of layer ``index`` inside ``module``'s call ``within``, or None where the rule cannot
    say where its values went. Within float32 rounding of its own values, a layer passes on the rounding
    of code that changed before it anywhere, unless tensors of its own that no changed code covers
    changed (weights alone). Past that, the code of ``module`` itself changed before it, and a layer whose
    own tensors changed holds another layer's values, gave its own to another, or merged them."""
    code = judge.code
    if judge.holds(layer):
        weights = [t for t in judge.own_changed(layer) if not code.covers(t, judge.accounted)]
        inherited = code.rounds_before(index) and not code.recomputes(module_of(layer.name))
        return Move(within, rounded=True) if inherited and not weights else None
    if not code.ran_before(index, module):
        return None
    move = Move(within, _now_as(layer, judge), _took(layer, judge), reshaped=judge.reshaped(layer))
    if move.now_as or move.took or move.reshaped:
        return move
    batched, split = judge.regrouped(layer)
    if batched or split:
        return Move(within, merged=batched, split=split)
    if not judge.own_changed(layer):
        return move
    merged = judge.merged(layer)
    return Move(within, merged=merged) if merged else None


def _onward(layer: LayerInfo, index: int, judge: _Judge) -> Move | None:
    """The move of layer ``index`` where no call around it holds (a change after it moved the outputs),
    on evidence of its own: it holds its own values within the rounding of weights re-expressed before
    it, or its values went on to a later layer (a fold's conv, a split's first part) or merged."""
    move = _move(layer, index, ROOT, None, judge)
    return move if move and (move.rounded or move.now_as or move.took or move.merged) else None


def _now_as(layer: LayerInfo, judge: _Judge) -> str | None:
    """The later baseline layer whose values the layer now holds: the one its name picks, else, where
    several hold them (a folded BatchNorm, its block and an identity after it), the first of them: any
    of them accounts for the values. An earlier one's values are a layer dropped, not moved."""
    own = judge.st.own(layer.name)
    if not identifies(layer.fp):
        return None
    names = [b.name for b in judge.baseline.layers]
    later = judge.baseline.layers[names.index(own) + 1:] if own in names else []
    held = [b for b in later if not is_output(b.name) and same(layer.fp, b.fp, judge.seal_limit(layer, b))]
    found = by_name(layer.name, held)
    return found.name if found else (held[0].name if held else None)


def _took(layer: LayerInfo, judge: _Judge) -> str | None:
    """The layer that now holds the layer's baseline values: one the structure matched to it, else a
    later one with its baseline's numbers."""
    own = judge.st.own(layer.name)
    names = [x.name for x in judge.run.layers]
    later = set(names[names.index(layer.name) + 1:])  # one that ran before it is a copy run twice
    matched = [n for n, old in (*judge.st.renames.items(), *judge.st.copies.items())
               if old == own and n in later]
    if matched:
        return matched[0]
    b = judge.baseline.layer(own)
    if b is None or not identifies(b.fp):
        return None
    holders = [x for x in judge.run.layers if x.name in later and not is_output(x.name)
               and same(x.fp, b.fp, judge.seal_limit(x, b))]
    return holders[0].name if len(holders) == 1 else None

