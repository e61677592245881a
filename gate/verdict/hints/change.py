"""``model-change`` (the reference moved) and ``runtime-change`` (only a runtime's error did)."""

from __future__ import annotations

from collections import Counter

from gate.core.spans import span
from gate.core.status import RowStatus
from gate.core.target import REFERENCE_PROVIDER
from gate.verdict.ahead import ahead
from gate.verdict.casts import changed as cast_changes
from gate.verdict.casts import position
from gate.verdict.causes import causes, later
from gate.verdict.hints import numerics
from gate.verdict.hints.context import Context, make
from gate.verdict.hints.weights import digest_changed, weights_changed
from gate.verdict.notes import Hint
from gate.verdict.reexpression import traced_ops_changed
from gate.verdict.rows import Regression
from gate.verdict.tensors import TensorChanges
from gate.verdict.types import ProviderVerdict


def describe_tensors(names: list[str]) -> str:
    """``tensor `bn.running_mean```; past three, counted per module (``4 tensors: 4 of layer4.1, 1 of fc``)."""
    if len(names) <= 3:
        return ", ".join(f"tensor {span(n)}" for n in names)
    return f"{len(names)} tensors: {_by_module(names)}"


def _by_module(names: list[str]) -> str:
    """``4 of layer4.1, 1 of fc``: coarser until at most three modules are named."""
    modules = [n.rpartition(".")[0] for n in names]
    while len(set(modules)) > 3:
        coarser = [m.rpartition(".")[0] or m for m in modules]  # a top-level module keeps its name
        if coarser == modules:
            break
        modules = coarser
    return ", ".join(f"{c} of {m}" for m, c in Counter(m or "(model)" for m in modules).most_common())


def _one_sided(tensors: TensorChanges | None, said: list[str]) -> str:
    """The tensors only one side has (beside those ``said`` changed): new, then gone, never a change of value."""
    if tensors is None:
        return ""
    new = [n for n in tensors.new if n not in said]
    fresh = set(tensors.new)
    gone = [n for n in tensors.unmatched if n not in said and n not in fresh]
    parts = []
    for names, what in ((new, "new tensor{}"), (gone, "tensor{} gone")):
        if names:
            listed = ", ".join(map(span, names)) if len(names) <= 3 else _by_module(names)
            parts.append(f"{len(names)} {what.format('s' * (len(names) != 1))} ({listed})")
    return "; ".join(parts)


def hints(ctx: Context) -> list[Hint]:
    base, now = ctx.baseline.meta, ctx.run.meta
    weights, tensors = weights_changed(ctx)
    graph_changed = digest_changed(base.graph_digest, now.graph_digest)
    out = []
    ref = ctx.reference
    if ref is not None and ref.first_regression is not None:
        out.append(_model_change(ctx, ref, ref.first_regression, weights, tensors, graph_changed))
    casts = cast_changes(ctx.run, ctx.baseline, ctx.structure.renames if ctx.structure else None)
    if casts:
        out.append(_casts_changed(ctx, casts))
    cast_first = min((position(ctx.order, call) for call in casts), default=None)
    first = ref.first_regression if ref is not None else None
    ref_first = None if first is None else ctx.index.get(first.layer, len(ctx.order))
    drift = {r.layer: r.value for r in ref.rows} if ref is not None else {}
    for pv in ctx.runtimes():
        fr = pv.first_regression
        if pv.limits_only or pv.audit_only:
            continue  # no error moved: a limit tighter than it, or an audit, failed (the step says)
        flags, named = numerics.changes(ctx, pv)
        if fr is None:
            if flags:
                out.append(_numerics_only(pv, flags, named))
            continue
        idx = ctx.index.get(fr.layer, len(ctx.order))
        ref_moved = ref_first is not None and ref_first <= idx
        row = ctx.rows(pv).get(fr.layer)
        base_err, value = (row.baseline if row else None), fr.value
        ratio = value / base_err if value is not None and base_err else None
        if ref_moved:
            where = ("the model also changed at or before this layer (the reference moved), and beyond what "
                     "that change explains (today's float32 PyTorch error there)")
        elif cast_first is not None and cast_first <= idx:
            where = ("the model's code casts to a lower precision at or before this layer (promoted in the float64 "
                     "reference, run as written here), and")
        else:
            where = "the reference did not move at or before this layer:"
        numbers = f" {value:.3g}, baseline {base_err:.3g}" if value is not None and base_err is not None else ""
        out.append(make(
            "runtime-change", fr.layer, pv.name,
            f"{pv.name} ({pv.precision}): {where} {'this' if ref_moved else 'only this'} runtime's error "
            f"against the reference moved at {span(fr.layer)} ({fr.check}{numbers})"
            + (f"; PyTorch numerics settings changed since the baseline: {named}" if flags else ""),
            check=fr.check, value=value, baseline=base_err, threshold=fr.threshold, ratio=ratio,
            reference_moved=ref_moved, reference_drift_here=drift.get(fr.layer),
            graph_changed=graph_changed, weights_changed=weights,
            **({"numerics": numerics.evidence(flags)} if flags else {})))
    return out


def _numerics_only(pv: ProviderVerdict, flags: dict[str, tuple[str, str]], named: str) -> Hint:
    """A torch provider's numerics settings moved and no layer regressed: still worth naming."""
    return make("runtime-change", "(model)", pv.name,
                f"{pv.name} ({pv.precision}): PyTorch numerics settings changed since the baseline: {named}; "
                "no layer regressed", numerics=numerics.evidence(flags))


def _casts_changed(ctx: Context, casts: dict[str, tuple[int, int]]) -> Hint:
    first, (was, now) = next(iter(casts.items()))
    return make(
        "model-change", first, REFERENCE_PROVIDER,
        f"the model's code casts below float32 {'more' if now > was else 'less'} often than in the baseline, "
        f"first at {first} ({was} -> {now} casts): the float64 reference promotes them and did not move, the "
        "runtimes run the casts as written"
        + (", so their errors there are the casts' rounding" if now > was else ""),
        cause="casts", changes={call: {"baseline": b, "now": n} for call, (b, n) in list(casts.items())[:50]},
        weights_changed=weights_changed(ctx)[0])


def _model_change(ctx: Context, reference: ProviderVerdict, fr: Regression, weights: bool | None,
                  tensors: TensorChanges | None, graph_changed: bool | None) -> Hint:
    moved = [r.layer for r in reference.rows
             if r.status in (RowStatus.FAIL, RowStatus.FOLLOWS, RowStatus.NEW, RowStatus.MISSING)]
    changed = tensors.values if tensors else None
    code = traced_ops_changed(ctx.run, ctx.baseline)
    why = _why(ctx, weights, tensors, code)
    now, before = ctx.run.meta.lowered, ctx.baseline.meta.lowered
    lower = [x for x in now or () if before is not None and x not in set(before)]
    if lower:  # the model's own cast or half weights: a precision nobody configured, named
        why += (f"; its graph now computes below float32 where the baseline's did not ({len(lower)} new, "
                f"first: {lower[0]})")
    value = f" {fr.value:.3g}" if fr.value is not None else ""
    first = ahead(ctx.structure, ctx.order, [x.name for x in ctx.baseline.layers], fr.layer)
    # each later change of its own is named: a reviewer who meant one change sees the other
    renames = ctx.structure.renames if ctx.structure else {}
    found = tuple((causes(fr, reference.rows, ctx.run, ctx.baseline, ctx.index, renames) or [])[1:])
    moved_at = f"the {ctx.ref_dtype} reference moved first"
    if first.output:  # nothing moved: an output one side has is what ships changed
        said = f"the model changed: {first.words(fr.layer)}; {why}"
    elif first:  # the new or gone layers before it are what the change did there
        said = f"the model changed: {first.words(fr.layer)}, where {moved_at} ({fr.check}{value}); {why}"
    else:
        said = f"{moved_at} at {span(fr.layer)} ({fr.check}{value}){later(found)}: the model changed, {why}"
    return make(
        "model-change", fr.layer, REFERENCE_PROVIDER, said + first.outputs_words(),
        check=fr.check, value=fr.value, threshold=fr.threshold, weights_changed=weights,
        cause="random" if ctx.run.meta.random_draws else
        ("code" if weights is False or (weights and code) else "weights" if weights else "unknown"),
        weights_digest_baseline=ctx.baseline.meta.weights_digest, weights_digest_now=ctx.run.meta.weights_digest,
        graph_changed=graph_changed, layers_moved=len(moved), first_layers_moved=moved[:5],
        **({"ahead": first.to_dict()} if first or first.outputs else {}),
        **({"causes": [c.to_dict() for c in found]} if found else {}),
        **({"tensors_changed": changed[:50]} if changed else {}),
        **({"tensors_renamed": tensors.renamed} if tensors and tensors.renamed else {}),
        **({"tensors_new_or_gone": tensors.unmatched[:50]} if tensors and tensors.unmatched else {}))


def _why(ctx: Context, weights: bool | None, tensors: TensorChanges | None, code: bool) -> str:
    """What of the model changed: its weights (which tensors), its code, or random draws."""
    changed = tensors.values if tensors else []
    one_sided = _one_sided(tensors, changed)
    if ctx.run.meta.random_draws:
        draws = "; ".join(ctx.run.meta.random_draws[:2])
        return f"or the forward drew other random numbers: it draws them ({draws})"
    if weights and changed:
        return f"its {'code and ' * code}weights changed: {describe_tensors(changed)}" + \
            (f"; {one_sided}" if one_sided else "")
    if weights:
        return "its weights changed (the weights digest differs from the baseline's)"
    if weights is False and one_sided:  # every kept tensor kept its values
        return f"its code changed: {one_sided}" + _renamed(tensors, "; ")
    if weights is False:
        return ("its code changed: the weights are the baseline's" + _renamed(tensors, " (", ")") + ", so the "
                "forward, a module type or a hyperparameter (eps, scale, padding, activation) differs")
    return "its code or weights changed (no weights digest to tell which)"


def _renamed(tensors: TensorChanges | None, before: str, after: str = "") -> str:
    """What the digests still differ by where no kept tensor's values did: names the verdict matched."""
    if tensors is None or not tensors.renamed:
        return ""
    return f"{before}{tensors.renamed} tensor{'s' * (tensors.renamed != 1)} renamed with the layers the verdict " \
        f"matched{after}"
