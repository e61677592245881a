"""What re-expressing the weights did to their values: the tensors one side lacks (a fold, a merge, a split,
a rename) and the kept tensors beside them whose values changed, grouped by the modules around them.

A group whose elements are as many as before re-expressed values without computing new ones (a split, a
merge, a rename): the total of their value sums (``gate.model.weights.value_sums``) holds too, or a value
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
    changed: frozenset[str]  # in groups as many nonzero values as before, not the same: weights changed


def _container(tensor: str) -> str:
    """The module around the tensor's own module, where a split or a merge re-expresses tensors; for a
    top-level module, itself (the model is around every module: no group of its own)."""
    owner = tensor.rpartition(".")[0]
    return owner.rpartition(".")[0] or owner


def _ancestors(module: str) -> list[str]:
    """The modules around ``module``, the model itself left out: joined through it, every re-expression of
    a model with a top-level tensor would be one group."""
    parts = module.split(".") if module else []
    return [".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1)]


Total = tuple[int, int, int, int]  # values, nonzero values, and their two sums
COUNTS = (0, 1)  # a group balances where either count does: a value pruned to zero, or zeros added


def _total(sums: Mapping[str, str], names: list[str]) -> Total | None:
    size = count = s1 = s2 = 0
    for name in names:
        if name not in sums:
            return None
        n, m, hexes = sums[name].split(".")
        size, count = size + int(n), count + int(m)
        s1, s2 = s1 + int(hexes[:16], 16), s2 + int(hexes[16:], 16)
    return size, count, s1 % 2**64, s2 % 2**64


def _net(groups: list[tuple[list[str], Total, Total]], k: int) -> int:
    return sum(g[1][k] - g[2][k] for g in groups)


def _groups(tensors: set[str]) -> list[list[str]]:
    """Tensors by container, each joined to the containers around it (a split's parts sit inside the module
    it split)."""
    root: dict[str, str] = {_container(t): _container(t) for t in tensors}

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
    for t in sorted(tensors):
        groups.setdefault(find(_container(t)), []).append(t)
    return list(groups.values())


def _judge(groups: list[tuple[list[str], Total, Total]], moved: set[str], changed: set[str]) -> None:
    """Groups whose counts balance together: the same values, or weights changed."""
    same = all(_net(groups, k) % 2**64 == 0 for k in (2, 3))
    (moved if same else changed).update(t for g in groups for t in g[0])


def classify(now: Mapping[str, str], before: Mapping[str, str], now_sums: Mapping[str, str] | None,
             before_sums: Mapping[str, str] | None) -> Reexpression:
    """The re-expressed tensors of a run (``now``: its tensors' digests) against its baseline's. A tensor
    gone and a new one holding exactly its values (a rename, a wrap) only moved. The rest go by group, and
    a group whose count of nonzero values changed may be the other half of another (a module moved from one
    container to another): two whose changes cancel are judged together. What is left unbalanced computed
    new values."""
    one_sided = set(now) ^ set(before)
    kept = {n for n in now if n in before and now[n] != before[n]}
    a, b = now_sums or {}, before_sums or {}
    moved: set[str] = set()
    gone: dict[str, list[str]] = {}
    for t in sorted(one_sided - set(now)):
        gone.setdefault(b.get(t, t), []).append(t)  # no sum: a key no new tensor has
    for t in sorted(one_sided - set(before)):
        if gone.get(a.get(t, "")):
            moved.update((t, gone[a[t]].pop()))
    computed: set[str] = set()
    changed: set[str] = set()
    unbalanced: list[tuple[list[str], Total, Total]] = []
    for members in _groups((one_sided | kept) - moved):
        if not one_sided.intersection(members):
            continue  # kept tensors alone: weights changed, as ever
        then = _total(b, [t for t in members if t in before])
        after = _total(a, [t for t in members if t in now])
        if then is None or after is None:
            computed.update(members)
        elif any(then[k] == after[k] for k in COUNTS):
            _judge([(members, then, after)], moved, changed)
        else:
            unbalanced.append((members, then, after))
    left: list[tuple[list[str], Total, Total]] = []
    while unbalanced:
        first = unbalanced.pop(0)
        other = next((u for u in unbalanced if any(_net([first, u], k) == 0 for k in COUNTS)), None)
        if other is None:
            left.append(first)
            continue
        unbalanced.remove(other)
        _judge([first, other], moved, changed)
    if left and any(_net(left, k) == 0 for k in COUNTS):
        _judge(left, moved, changed)  # siblings a top-level module was split into, say
    else:
        computed.update(t for u in left for t in u[0])
    return Reexpression(frozenset(one_sided), frozenset(computed), frozenset(moved), frozenset(changed))


def only_moved(now: Mapping[str, str], before: Mapping[str, str], now_sums: Mapping[str, str] | None,
               before_sums: Mapping[str, str] | None) -> bool:
    """Whether every tensor whose digest changed, or that one side lacks, only moved its values (a rename,
    a split): the weights changed names, not values."""
    differ = {n for n in {**now, **before} if now.get(n) != before.get(n)}
    return bool(differ) and differ <= classify(now, before, now_sums, before_sums).moved
