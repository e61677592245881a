"""``model-change`` (the reference moved) and ``runtime-change`` (only a runtime's error did)."""

from __future__ import annotations

from gate.verdict.hints.context import Context, make
from gate.verdict.types import Hint


def _digest_changed(a: str | None, b: str | None) -> bool | None:
    return None if not a or not b else a != b


def hints(ctx: Context) -> list[Hint]:
    base, now = ctx.baseline.meta, ctx.run.meta
    weights_changed = _digest_changed(base.weights_digest, now.weights_digest)
    graph_changed = _digest_changed(base.graph_digest, now.graph_digest)
    out = []
    ref = ctx.reference
    if ref is not None and ref.first_regression is not None:
        out.append(_model_change(ctx, weights_changed, graph_changed))
    ref_first = ctx.ref_first_index()
    for pv in ctx.runtimes():
        fr = pv.first_regression
        if fr is None:
            continue
        idx = ctx.index.get(fr.layer, len(ctx.order))
        ref_moved = ref_first is not None and ref_first <= idx
        row = ctx.rows(pv).get(fr.layer)
        base_err, value = (row.baseline if row else None), fr.value
        ratio = value / base_err if value is not None and base_err else None
        where = ("the model also changed at or before this layer (the reference moved), and" if ref_moved else
                 "the reference did not move at or before this layer:")
        numbers = f" {value:.3g}, baseline {base_err:.3g}" if value is not None and base_err is not None else ""
        out.append(make(
            "runtime-change", fr.layer, pv.name,
            f"{pv.name} ({pv.precision}): {where} only this runtime's error against the reference moved at "
            f"{fr.layer} ({fr.check}{numbers})",
            check=fr.check, value=value, baseline=base_err, threshold=fr.threshold, ratio=ratio,
            reference_moved=ref_moved, reference_drift_here=ctx.ref_value(fr.layer),
            graph_changed=graph_changed, weights_changed=weights_changed))
    return out


def _model_change(ctx: Context, weights_changed: bool | None, graph_changed: bool | None) -> Hint:
    fr = ctx.reference.first_regression
    moved = [r.layer for r in ctx.reference.rows if r.status in ("fail", "new", "missing")]
    if weights_changed:
        why = "its weights changed (the weights digest differs from the baseline's)"
    elif weights_changed is False:
        why = ("its code changed: the weights digest equals the baseline's, so the forward, a module type or a "
               "hyperparameter (eps, scale, padding, activation) differs")
    else:
        why = "its code or weights changed (no weights digest to tell which)"
    value = f" {fr.value:.3g}" if fr.value is not None else ""
    return make(
        "model-change", fr.layer, "torch-cpu",
        f"the {ctx.ref_dtype} reference moved first at {fr.layer} ({fr.check}{value}): the model changed, {why}",
        check=fr.check, value=fr.value, threshold=fr.threshold, weights_changed=weights_changed,
        cause="weights" if weights_changed else ("code" if weights_changed is False else "unknown"),
        weights_digest_baseline=ctx.baseline.meta.weights_digest, weights_digest_now=ctx.run.meta.weights_digest,
        graph_changed=graph_changed, layers_moved=len(moved), first_layers_moved=moved[:5])
