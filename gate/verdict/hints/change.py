"""``model-change`` (the reference moved) and ``runtime-change`` (only a runtime's error did)."""

from __future__ import annotations

from gate.core.status import RowStatus
from gate.core.target import REFERENCE_PROVIDER
from gate.verdict.hints import numerics
from gate.verdict.hints.context import Context, make
from gate.verdict.types import Hint


def _digest_changed(a: str | None, b: str | None) -> bool | None:
    return None if not a or not b else a != b


def tensors_changed(before: dict[str, str] | None, now: dict[str, str] | None) -> list[str] | None:
    """The parameters and buffers whose digest differs (added and removed ones too), in name order;
    None when either side recorded none (a baseline older than per-tensor digests)."""
    if not before or not now:
        return None
    return sorted(n for n in {*before, *now} if before.get(n) != now.get(n))


def describe_tensors(names: list[str]) -> str:
    """``tensor `bn.running_mean```; past three, counted per module, coarser until at most three
    modules are named (``4 tensors of layer4.1, 1 of fc``)."""
    if len(names) <= 3:
        return ", ".join(f"tensor `{n}`" for n in names)
    modules = [n.rpartition(".")[0] for n in names]
    while len(set(modules)) > 3:
        coarser = [m.rpartition(".")[0] or m for m in modules]  # a top-level module keeps its name
        if coarser == modules:
            break
        modules = coarser
    counts: dict[str, int] = {}
    for m in modules:
        counts[m or "(model)"] = counts.get(m or "(model)", 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    first, *rest = [f"{c} of {m}" for m, c in ranked]
    return f"{len(names)} tensors: {first}" + "".join(f", {x}" for x in rest)


def hints(ctx: Context) -> list[Hint]:
    base, now = ctx.baseline.meta, ctx.run.meta
    weights_changed = _digest_changed(base.weights_digest, now.weights_digest)
    graph_changed = _digest_changed(base.graph_digest, now.graph_digest)
    out = []
    ref = ctx.reference
    if ref is not None and ref.first_regression is not None:
        out.append(_model_change(ctx, weights_changed, graph_changed))
    casts = _cast_changes(ctx)
    if casts:
        out.append(_casts_changed(ctx, casts))
    cast_first = min((_order(ctx, call) for call in casts), default=None)
    ref_first = ctx.ref_first_index()
    for pv in ctx.runtimes():
        fr = pv.first_regression
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
            where = "the model also changed at or before this layer (the reference moved), and"
        elif cast_first is not None and cast_first <= idx:
            where = ("the model's code casts to a lower precision at or before this layer (promoted in the float64 "
                     "reference, run as written here), and")
        else:
            where = "the reference did not move at or before this layer:"
        numbers = f" {value:.3g}, baseline {base_err:.3g}" if value is not None and base_err is not None else ""
        out.append(make(
            "runtime-change", fr.layer, pv.name,
            f"{pv.name} ({pv.precision}): {where} only this runtime's error against the reference moved at "
            f"{fr.layer} ({fr.check}{numbers})" + (f"; PyTorch numerics settings changed since the baseline: {named}"
                                                  if flags else ""),
            check=fr.check, value=value, baseline=base_err, threshold=fr.threshold, ratio=ratio,
            reference_moved=ref_moved, reference_drift_here=ctx.ref_value(fr.layer),
            graph_changed=graph_changed, weights_changed=weights_changed,
            **({"numerics": numerics.evidence(flags)} if flags else {})))
    return out


def _numerics_only(pv, flags: dict[str, tuple[str, str]], named: str):
    """A torch provider's numerics settings moved and no layer regressed: still worth naming."""
    return make("runtime-change", "(model)", pv.name,
                f"{pv.name} ({pv.precision}): PyTorch numerics settings changed since the baseline: {named}; "
                "no layer regressed", numerics=numerics.evidence(flags))


def _order(ctx: Context, call: str) -> int:
    """Where a module call sits in execution order: its first layer (a call's layers are its name,
    or its name with an element suffix)."""
    return next((i for i, name in enumerate(ctx.order) if name == call or name.startswith(call + "[")),
                len(ctx.order))


def _cast_changes(ctx: Context) -> dict[str, tuple[int, int]]:
    """Module calls whose casts to a lower precision (promoted in the reference) changed: (baseline, now)."""
    before, now = ctx.baseline.meta.promoted or {}, ctx.run.meta.promoted or {}
    changed = {call: (before.get(call, 0), now.get(call, 0)) for call in {*before, *now}
               if before.get(call, 0) != now.get(call, 0)}
    return dict(sorted(changed.items(), key=lambda kv: _order(ctx, kv[0])))


def _casts_changed(ctx: Context, casts: dict[str, tuple[int, int]]) -> Hint:
    first, (was, now) = next(iter(casts.items()))
    return make(
        "model-change", first, REFERENCE_PROVIDER,
        f"the model's code casts to a lower precision {'more' if now > was else 'less'} often than in the baseline, "
        f"first at {first} ({was} -> {now} casts): the float64 reference promotes them and did not move, the "
        "runtimes run the casts as written, so their errors there are the casts' rounding",
        cause="casts", changes={call: {"baseline": b, "now": n} for call, (b, n) in list(casts.items())[:50]},
        weights_changed=_digest_changed(ctx.baseline.meta.weights_digest, ctx.run.meta.weights_digest))


def _model_change(ctx: Context, weights_changed: bool | None, graph_changed: bool | None) -> Hint:
    fr = ctx.reference.first_regression
    moved = [r.layer for r in ctx.reference.rows if r.status in (RowStatus.FAIL, RowStatus.NEW, RowStatus.MISSING)]
    changed = tensors_changed(ctx.baseline.meta.tensor_digests, ctx.run.meta.tensor_digests)
    if weights_changed and changed:
        why = f"its weights changed: {describe_tensors(changed)}"
    elif weights_changed:
        why = "its weights changed (the weights digest differs from the baseline's)"
    elif weights_changed is False:
        why = ("its code changed: the weights digest equals the baseline's, so the forward, a module type or a "
               "hyperparameter (eps, scale, padding, activation) differs")
    else:
        why = "its code or weights changed (no weights digest to tell which)"
    value = f" {fr.value:.3g}" if fr.value is not None else ""
    return make(
        "model-change", fr.layer, REFERENCE_PROVIDER,
        f"the {ctx.ref_dtype} reference moved first at {fr.layer} ({fr.check}{value}): the model changed, {why}",
        check=fr.check, value=fr.value, threshold=fr.threshold, weights_changed=weights_changed,
        cause="weights" if weights_changed else ("code" if weights_changed is False else "unknown"),
        weights_digest_baseline=ctx.baseline.meta.weights_digest, weights_digest_now=ctx.run.meta.weights_digest,
        graph_changed=graph_changed, layers_moved=len(moved), first_layers_moved=moved[:5],
        **({"tensors_changed": changed[:50]} if changed else {}))
