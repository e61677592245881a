"""What re-expressing the weights did to their values: the tensors one side lacks (a fold, a merge, a split,
a rename) and the kept tensors beside them whose values changed, grouped by the modules around them.

A group whose elements are as many as before re-expressed values without computing new ones (a split, a
merge, a rename): the total of their value sums (``gate.model.build.value_sums``) holds too, or a value
changed. A group whose count changed computed new values (a BatchNorm folded into a conv, two Linears made
one). Where a side did not record its sums, every group is taken as computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


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


def only_moved(now: Mapping[str, str], before: Mapping[str, str], now_sums: Mapping[str, str] | None,
               before_sums: Mapping[str, str] | None) -> bool:
    """Whether every tensor whose digest changed, or that one side lacks, only moved its values (a rename,
    a split): the weights changed names, not values."""
    differ = {n for n in {**now, **before} if now.get(n) != before.get(n)}
    return bool(differ) and differ <= classify(now, before, now_sums, before_sums).moved
