"""Which weights changed since the baseline, as far as the verdict judged: shared by the hints that
say whether a model's weights or its code changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from gate.core.layers import module_of
from gate.core.runs import ModelRun
from gate.formats.baseline import Baseline
from gate.verdict.hints.context import Context
from gate.verdict.reexpression import reexpression


def digest_changed(a: str | None, b: str | None) -> bool | None:
    return None if not a or not b else a != b


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
                   altered: frozenset[str] = frozenset()) -> TensorChanges | None:
    """``renames``: the verdict's renamed layers (now -> baseline); ``altered``: tensors a split, a merge or
    a rename re-expressed into other values (``gate.core.reexpressed``). None without per-tensor digests."""
    if not before or not now:
        return None
    modules = {module_of(new): module_of(old) for new, old in renames.items()}
    recorded = {n: _recorded(n, modules) for n in now}
    values = sorted(n for n in now if recorded[n] == n and n in before and before[n] != now[n])
    renamed = [n for n in now if recorded[n] != n and recorded[n] in before]
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


def values_changed(run: ModelRun, baseline: Baseline, renames: dict[str, str]) -> list[str]:
    """The tensors whose values changed, re-expressions aside: none a split, a merge or a rename only moved,
    nor one a fold computed anew (its float32 rounding is no change of the weights)."""
    r = reexpression(run, baseline)
    tensors = tensor_changes(baseline.meta.tensor_digests, run.meta.tensor_digests, renames, r.changed)
    return [] if tensors is None else [t for t in tensors.values if t not in r.computed | r.moved]


def weights_changed(ctx: Context) -> tuple[bool | None, TensorChanges | None]:
    """Whether the weights' values changed since the baseline (None: no digest to tell), and which
    tensors did: a digest that differs only by names the verdict matched is no change of value."""
    base, now = ctx.baseline.meta, ctx.run.meta
    changed = digest_changed(base.weights_digest, now.weights_digest)
    renames = ctx.structure.renames if ctx.structure else {}
    r = reexpression(ctx.run, ctx.baseline)
    tensors = tensor_changes(base.tensor_digests, now.tensor_digests, renames, r.changed)
    if changed and tensors is not None and not tensors.values:
        changed = False  # every tensor kept its values, under its own name or the one it was matched to
    return changed, tensors
