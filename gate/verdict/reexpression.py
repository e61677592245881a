"""What re-expressing the weights did to their values: the tensors one side lacks (a fold, a merge, a split,
a rename) and the kept tensors beside them whose values changed, grouped by the modules around them.

A group whose elements are as many as before re-expressed values without computing new ones (a split, a
merge, a rename): the total of their value sums (``gate.model.build.value_sums``) holds too, or a value
changed. Such a group has no float32 rounding to excuse any drift: what moved is a weight change. A group
whose count changed computed new values (a BatchNorm folded into a conv, two Linears made one): their
float32 rounding may move a module's float64 output (``moves.FOLD_ROUNDING``). Where a side did not record
its sums, every group is taken as computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gate.core.runs import ModelRun
from gate.core.status import KeyPart
from gate.formats.baseline import Baseline


@dataclass(frozen=True)
class Reexpression:
    one_sided: frozenset[str]  # tensors one side lacks
    computed: frozenset[str]  # in groups that computed new values: float32 rounding may follow them
    moved: frozenset[str]  # in groups whose values only moved: nothing to excuse
    changed: frozenset[str]  # in groups that kept their count but not their values: weights changed


def _container(tensor: str) -> str:
    """The module around the tensor's own module: a split or a merge re-expresses tensors there."""
    return tensor.rpartition(".")[0].rpartition(".")[0]


def _ancestors(module: str) -> list[str]:
    parts = module.split(".") if module else []
    return [".".join(parts[:k]) for k in range(len(parts) - 1, -1, -1)]


def _total(sums: Mapping[str, str], names: list[str]) -> tuple[int, int, int] | None:
    count = s1 = s2 = 0
    for name in names:
        if name not in sums:
            return None
        n, _, hexes = sums[name].partition(".")
        count, s1, s2 = count + int(n), s1 + int(hexes[:16], 16), s2 + int(hexes[16:], 16)
    return count, s1 % 2**64, s2 % 2**64


def classify(now: Mapping[str, str], before: Mapping[str, str], now_sums: Mapping[str, str] | None,
             before_sums: Mapping[str, str] | None) -> Reexpression:
    """The re-expressed tensors of a run (``now``: its tensors' digests) against its baseline's, by group."""
    one_sided = set(now) ^ set(before)
    kept = {n for n in now if n in before and now[n] != before[n]}
    # groups: containers joined to every container around them that also holds a re-expressed tensor
    root: dict[str, str] = {_container(t): _container(t) for t in one_sided | kept}

    def find(c: str) -> str:
        while root[c] != c:
            root[c] = root[root[c]]
            c = root[c]
        return c

    for c in list(root):
        for a in _ancestors(c):
            if a in root:
                root[find(c)] = find(a)
    groups: dict[str, list[str]] = {}
    for t in one_sided | kept:
        groups.setdefault(find(_container(t)), []).append(t)
    computed: set[str] = set()
    moved: set[str] = set()
    changed: set[str] = set()
    for members in groups.values():
        if not one_sided.intersection(members):
            continue  # kept tensors alone: weights changed, as ever
        then = _total(before_sums or {}, [t for t in members if t in before])
        after = _total(now_sums or {}, [t for t in members if t in now])
        if then is None or after is None or then[0] != after[0]:
            computed.update(members)
        else:
            (moved if then == after else changed).update(members)
    return Reexpression(frozenset(one_sided), frozenset(computed), frozenset(moved), frozenset(changed))


def _tensors_differ(run: ModelRun, baseline: Baseline) -> bool | None:
    """Whether one side holds parameters or buffers the other lacks; None where either did not record them."""
    tensors, recorded = run.meta.tensor_digests, baseline.meta.tensor_digests
    return set(tensors) != set(recorded) if tensors and recorded else None


def _key_changed(run: ModelRun, baseline: Baseline) -> bool:
    now, before = run.meta.content_key or {}, baseline.meta.content_key or {}
    a, b = now.get("parts") or {}, before.get("parts") or {}
    return bool(a and b) and any(a.get(p.value) != b.get(p.value) for p in (KeyPart.CODE, KeyPart.SOURCE))


def reexpression(run: ModelRun, baseline: Baseline) -> Reexpression:
    """The run's re-expressed tensors against its baseline's, by group (``classify``)."""
    m, b = run.meta, baseline.meta
    return classify(m.tensor_digests or {}, b.tensor_digests or {}, m.tensor_sums, b.tensor_sums)


def rounds(run: ModelRun, baseline: Baseline) -> bool:
    """Whether a re-expression computed new weights in float32 (a fold): their rounding may move outputs;
    where a side did not record its tensors, wherever the code changed."""
    differ = _tensors_differ(run, baseline)
    return _key_changed(run, baseline) if differ is None else bool(reexpression(run, baseline).computed)


def code_changed(run: ModelRun, baseline: Baseline) -> bool:
    """Whether the model's code changed since the baseline, as far as the run can tell: its content
    key's code or source part, or parameters and buffers only one side has."""
    return _key_changed(run, baseline) or bool(_tensors_differ(run, baseline))
