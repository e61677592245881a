"""``export-graph-change``: ONNX op types added/removed since the baseline, and per target the
layers that became folded/absent (or have their own value again).
"""

from __future__ import annotations

from gate.core.status import LayerStatus, RunStatus
from gate.verdict.hints.context import Context, make
from gate.verdict.hints.weights import weights_changed
from gate.verdict.notes import Hint


def _status_changes(ctx: Context) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for prun in ctx.run.providers:
        entry = ctx.baseline.entry_for(prun.target)[0] if prun.status == RunStatus.OK else None
        if entry is None:
            continue
        changes = [[name, entry.layers[name].status, prun.layers[name].status] for name in ctx.order
                   if name in entry.layers and name in prun.layers
                   and entry.layers[name].status != prun.layers[name].status]
        if changes:
            out[prun.name] = changes
    return dict(sorted(out.items()))  # the baseline's provider order


def hints(ctx: Context) -> list[Hint]:
    out = []
    base, now = ctx.baseline.meta, ctx.run.meta
    before, after = set(base.op_types or ()), set(now.op_types or ())
    known = base.op_types is not None and now.op_types is not None
    added = sorted(after - before) if known else []
    removed = sorted(before - after) if known else []
    if added or removed:
        what = ([f"op types added: {', '.join(added)}"] if added else []) + (
            [f"op types removed: {', '.join(removed)}"] if removed else [])
        out.append(make(
            "export-graph-change", "(model)", "(export)", "the shipped ONNX graph changed: " + "; ".join(what),
            op_types_added=added, op_types_removed=removed, graph_digest_baseline=base.graph_digest,
            graph_digest_now=now.graph_digest,
            graph_digest_changed=bool(base.graph_digest and now.graph_digest and base.graph_digest != now.graph_digest),
            weights_changed=weights_changed(ctx)[0]))
    for provider, changes in _status_changes(ctx).items():
        became = [c for c in changes if c[2] in (LayerStatus.FOLDED, LayerStatus.ABSENT)]
        back = [c for c in changes if c[2] == LayerStatus.OK]
        text = []
        if became:
            text.append(f"{len(became)} layer(s) became folded/absent (first: {became[0][0]} {became[0][1]} -> "
                        f"{became[0][2]})")
        if back:
            text.append(f"{len(back)} layer(s) have their own value again (first: {back[0][0]} {back[0][1]} -> ok)")
        out.append(make(
            "export-graph-change", changes[0][0], provider, f"{provider}: " + "; ".join(text)
            + " compared with the baseline: the exported graph's structure changed there",
            changes=changes[:200], became_folded_or_absent=len(became), became_ok=len(back)))
    return out
