"""Which weights changed since the baseline, as far as the verdict judged: shared by the hints that
say whether a model's weights or its code changed."""

from __future__ import annotations

from gate.core.runs import ModelRun
from gate.formats.baseline import Baseline
from gate.verdict.hints.context import Context
from gate.verdict.reexpression import reexpression
from gate.verdict.tensors import TensorChanges, sums, tensor_changes


def digest_changed(a: str | None, b: str | None) -> bool | None:
    return None if not a or not b else a != b


def values_changed(run: ModelRun, baseline: Baseline, renames: dict[str, str]) -> list[str]:
    """The tensors whose values changed, re-expressions aside: none a split, a merge or a rename only moved,
    nor one a fold computed anew (its float32 rounding is no change of the weights)."""
    r = reexpression(run, baseline)
    tensors = tensor_changes(baseline.meta.tensor_digests, run.meta.tensor_digests, renames, r.changed,
                             sums(run, baseline))
    return [] if tensors is None else [t for t in tensors.values if t not in r.computed | r.moved]


def weights_changed(ctx: Context) -> tuple[bool | None, TensorChanges | None]:
    """Whether the weights' values changed since the baseline (None: no digest to tell), and which
    tensors did: a digest that differs only by names the verdict matched is no change of value."""
    base, now = ctx.baseline.meta, ctx.run.meta
    changed = digest_changed(base.weights_digest, now.weights_digest)
    renames = ctx.structure.renames if ctx.structure else {}
    r = reexpression(ctx.run, ctx.baseline)
    tensors = tensor_changes(base.tensor_digests, now.tensor_digests, renames, r.changed, sums(ctx.run, ctx.baseline))
    if changed and tensors is not None and not tensors.values:
        changed = False  # every tensor kept its values, under its own name or the one it was matched to
    return changed, tensors
