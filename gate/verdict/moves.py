"""Refactors inside a module: numbers decide across modules, not only across names.

Folding a normalization into the layer before it, merging parallel projections into one, splitting a
layer's work across two, moving a scale from one layer into the next: values move between the layers
inside a module while the module's output holds. So a layer whose float64 value moved (past its limit,
or to another shape) is a *move*, reported and not failed, when the output of a module call around it
holds: every element of that call's output matches its baseline layer within the reference's limit, and
one of them at least identifies a layer (a constant or empty output holds whatever happens inside).
The enclosing call may be the model itself: a change that leaves every output as it was moved nothing
that ships. A change whose effect reaches the output fails where it first moved; a layer with NaN/Inf
its baseline lacks, and a layer whose shape depends on values, never count as moves. Nor does a change
that flows on through a module whose tensors did not change (its input and its output both stray):
a contracting network fades a weight fault below any limit by its outputs, and an output that holds
by fading is no evidence that the values moved back (``carries``).

Weights folded in float32 are rounded to float32: the module's float64 output moves by that rounding
(a few 1e-8), far past the reference's 1e-9. Where the model's code changed (its content key's code or
source part, or tensors only one side has), an output also holds within the float32 runtimes' floor
(``seal``: 1e-6 by default, the budget for their own rounding): what float32 cannot tell from its
rounding is no change of what ships; the model's own outputs too hold within it then. A change of the
weights alone is held to the reference's limit.
"""

from __future__ import annotations

import bisect

from gate.core.layers import ROOT, is_gradient, is_output, module_of
from gate.core.runs import LayerInfo, ModelRun
from gate.core.status import KeyPart
from gate.formats.baseline import Baseline, BaselineLayer
from gate.verdict.structure import Limit, Move, Structure, by_name, identifies, same


def call_of(layer: str) -> str:
    """The call a layer is an element of: ``attn#2[0]`` -> ``attn#2``."""
    return layer.split("[", 1)[0]


def enclosing(module: str) -> list[str]:
    """The modules around ``module``, innermost first, the model last: ``a.b.c`` -> ``a.b``, ``a``, ``(model)``."""
    if module == ROOT:
        return []
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)] + [ROOT]


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

    def elements(self, first: int) -> list[LayerInfo]:
        """The elements of the call whose first element is layer ``first``."""
        key = call_of(self.layers[first].name)
        out = []
        for x in self.layers[first:]:
            if call_of(x.name) != key:
                break
            out.append(x)
        return out

    def start(self, index: int) -> int:
        """The index of the first element of the call layer ``index`` is an element of."""
        key = call_of(self.layers[index].name)
        while index and call_of(self.layers[index - 1].name) == key:
            index -= 1
        return index

    def own(self, index: int) -> list[LayerInfo]:
        """The elements of the call layer ``index`` is an element of."""
        return self.elements(self.start(index))


def code_changed(run: ModelRun, baseline: Baseline) -> bool:
    """Whether the model's code changed since the baseline, as far as the run can tell: its content
    key's code or source part, or parameters and buffers only one side has."""
    now, before = run.meta.content_key or {}, baseline.meta.content_key or {}
    a, b = now.get("parts") or {}, before.get("parts") or {}
    if a and b and any(a.get(p.value) != b.get(p.value) for p in (KeyPart.CODE, KeyPart.SOURCE)):
        return True
    tensors, recorded = run.meta.tensor_digests, baseline.meta.tensor_digests
    return bool(tensors and recorded and set(tensors) != set(recorded))


class _Judge:
    def __init__(self, run: ModelRun, baseline: Baseline, st: Structure, limit: Limit, seal: Limit):
        self.run, self.baseline, self.st, self.limit, self.seal_limit = run, baseline, st, limit, seal
        self._carried: list[int] | None = None
        self._tensors: dict[str, list[str]] = {}  # module -> the tensors it holds

    def recorded(self, layer: LayerInfo) -> BaselineLayer | None:
        return self.baseline.layer(self.st.own(layer.name))

    def holds(self, layer: LayerInfo) -> bool:
        """Its value is its baseline layer's, within the limit a module's output holds to."""
        b = self.recorded(layer)
        return b is not None and layer.data_dependent is None and b.data_dependent is None \
            and same(layer.fp, b.fp, self.seal_limit(layer, b))

    def moved(self, layer: LayerInfo) -> bool:
        """Its value moved in a way a refactor can move it: past the limit or to another shape, with the
        NaN/Inf counts of its baseline layer."""
        b = self.recorded(layer)
        if b is None or is_gradient(layer.name) or layer.data_dependent is not None:
            return False
        nonfinite = (layer.fp.nan, layer.fp.posinf, layer.fp.neginf) == (b.fp.nan, b.fp.posinf, b.fp.neginf)
        return nonfinite and not same(layer.fp, b.fp, self.limit(layer, b))

    def seal(self, call: list[LayerInfo]) -> bool:
        return bool(call) and all(self.holds(x) for x in call) and any(identifies(x.fp) for x in call)

    def strays(self, layer: LayerInfo) -> bool:
        """Its value is not its baseline layer's, past the limit a module's output holds to."""
        b = self.recorded(layer)
        return b is not None and not is_gradient(layer.name) and layer.data_dependent is None \
            and b.data_dependent is None and not same(layer.fp, b.fp, self.seal_limit(layer, b))

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
        now, before = self.run.meta.tensor_digests, self.baseline.meta.tensor_digests
        if not now or not before:
            return False
        module = module_of(layer.name)
        if module not in self._tensors:
            prefix = module + "."
            self._tensors[module] = [n for n in now if n.startswith(prefix)]
        own = self._tensors[module]
        return bool(own) and all(before.get(n) == now[n] for n in own)


def inside(run: ModelRun, baseline: Baseline, st: Structure, limit: Limit, seal: Limit | None = None) -> dict[str, Move]:
    """The layers that moved (past ``limit``) inside a module call whose output holds (within ``seal``,
    by default ``limit``), each with the innermost such call and where its values went."""
    judge, calls = _Judge(run, baseline, st, limit, seal or limit), _Calls(run.layers)
    out: dict[str, Move] = {}
    for i, layer in enumerate(run.layers):
        if not judge.moved(layer):
            continue
        if is_output(layer.name):  # what ships moves only within the rounding the model's outputs hold to
            if judge.holds(layer) and judge.seal(calls.own(i)):
                out[layer.name] = Move(call_of(layer.name), rounded=True)
            continue
        for module in enclosing(module_of(layer.name)):
            end, call = calls.after(module, i)
            if judge.carried(calls, i, end):
                break  # the change flowed on through unchanged modules: it fails where it first moved
            if judge.seal(call):
                within = call_of(call[0].name)
                out[layer.name] = Move(within, rounded=True) if judge.holds(layer) else \
                    Move(within, _now_as(layer, baseline, judge), _took(layer, run, st, judge))
                break
    return out


def _now_as(layer: LayerInfo, baseline: Baseline, judge: _Judge) -> str | None:
    """The baseline layer (not its own) whose values the layer now holds."""
    own = judge.st.own(layer.name)
    if not identifies(layer.fp):
        return None
    found = by_name(layer.name, [b for b in baseline.layers if b.name != own and not is_output(b.name)
                                 and same(layer.fp, b.fp, judge.seal_limit(layer, b))])
    return found.name if found else None


def _took(layer: LayerInfo, run: ModelRun, st: Structure, judge: _Judge) -> str | None:
    """The layer (not itself) that now holds the layer's baseline values: one the structure matched to
    it, else one with its baseline's numbers."""
    own = st.own(layer.name)
    matched = [n for n, old in (*st.renames.items(), *st.copies.items()) if old == own]
    if matched:
        return matched[0]
    b = judge.baseline.layer(own)
    if b is None or not identifies(b.fp):
        return None
    holders = [x for x in run.layers if x.name != layer.name and not is_output(x.name)
               and same(x.fp, b.fp, judge.seal_limit(x, b))]
    return holders[0].name if len(holders) == 1 else None

