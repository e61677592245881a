"""Which tensors changed since the baseline, by name and by value, as far as the verdict matched them:
a renamed module's tensors are compared under the names they had (shared by the verdict and its hints)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gate.core.layers import renamed_modules
from gate.core.runs import ModelRun
from gate.formats.baseline import Baseline

Sums = tuple[Mapping[str, str] | None, Mapping[str, str] | None]  # value sums, baseline's and the run's


@dataclass(frozen=True)
class TensorChanges:
    """The weights against the baseline's, as far as the verdict judged them. A tensor's digest covers
    its name, so a renamed module's tensors differ by digest whatever their values: the verdict's
    renames (a layer matched to its baseline layer by its numbers) say which name a tensor had, and a
    tensor under a name only one side has is not a change of value anyone measured."""

    values: list[str]  # kept under their names with another digest, or re-expressed into others: changed
    renamed: int  # tensors of modules the verdict compared as a baseline layer under another name
    unmatched: list[str]  # names on one side only: a module renamed (not matched), added or removed
    new: list[str] = field(default_factory=list)  # of ``unmatched``, those the run has


def tensor_changes(before: dict[str, str] | None, now: dict[str, str] | None, renames: dict[str, str],
                   altered: frozenset[str] = frozenset(), sums: Sums = ({}, {})) -> TensorChanges | None:
    """``renames``: the verdict's renamed layers (now -> baseline); ``altered``: tensors a split, a merge or
    a rename re-expressed into other values (``gate.core.reexpressed``); ``sums``: the tensors' value sums,
    before and now, which say whether a renamed tensor kept the values of the one it was matched to (a copy
    of a shared block, its weight off). None without per-tensor digests."""
    if not before or not now:
        return None
    modules = renamed_modules(renames)
    # A tensor under a name the baseline has, with its digest, kept its name and values: a layer matched
    # to another module's baseline layer (a hook that moved an activation into it) renames no tensor.
    recorded = {n: n if before.get(n) == now[n] else _recorded(n, modules) for n in now}
    values = sorted(n for n in now if recorded[n] == n and n in before and before[n] != now[n])
    renamed = [n for n in now if recorded[n] != n and recorded[n] in before]
    then, sums_now = sums[0] or {}, sums[1] or {}
    altered |= {n for n in renamed if n in sums_now and recorded[n] in then
                and sums_now[n] != then[recorded[n]]}
    matched = {recorded[n] for n in now if recorded[n] in before}
    new = sorted(n for n in now if recorded[n] not in before)
    unmatched = sorted({*new, *(n for n in before if n not in matched)})
    # a tensor matched by its layer's rename whose values changed all the same (a fault in a wrapped module)
    return TensorChanges(values + [n for n in [*renamed, *unmatched] if n in altered],
                         len([n for n in renamed if n not in altered]), unmatched, new)


def _recorded(tensor: str, modules: dict[str, str]) -> str:
    """The name ``tensor`` had in the baseline: its nearest enclosing module the verdict renamed, renamed."""
    prefix = tensor.rpartition(".")[0]
    while prefix:
        if prefix in modules:
            return modules[prefix] + tensor[len(prefix):]
        prefix = prefix.rpartition(".")[0]
    return tensor


def sums(run: ModelRun, baseline: Baseline) -> Sums:
    return baseline.meta.tensor_sums, run.meta.tensor_sums
