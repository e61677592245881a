"""One line on what a check reused and why, or why it ran the whole path: the console and the
Markdown comment say the same words (plain text; each renderer escapes it)."""

from __future__ import annotations

from gate.core.reuse import Reuse
from gate.core.status import CacheState, FullWhy

_WHY = {
    FullWhy.FORCED: "--full asked for it",
    FullWhy.UPDATE: "update-baseline always runs it",
    FullWhy.NO_BASELINE: "no baseline to take it from",
    FullWhy.NO_KEY: "the baseline records no content key (re-create it with update-baseline to reuse)",
    FullWhy.KEY_CHANGED: "the content key changed",
    FullWhy.UNKEYABLE: "no content key can vouch for this model",
    FullWhy.OUTPUTS: "output-tolerance needs the float64 outputs, which the export cache does not hold",
    FullWhy.GRADIENTS: "gradients are judged, and the content key traces the forward pass only",
    FullWhy.TRAINING: "the factory left modules in training mode, whose audit the content key cannot vouch for",
}

_GRAPH = {
    CacheState.HIT: "shipped graph from the export cache",
    CacheState.MISS: "exported (not in the export cache; stored now)",
    CacheState.CORRUPT: "exported (the cached entry failed its checks; replaced)",
    CacheState.BYPASSED: "exported (the cache is not read on a full run)",
    CacheState.OFF: "exported (no export cache)",
}


def reuse_line(r: Reuse) -> str:
    """"reused: float64 reference from the baseline (content key 3a93016fddea unchanged); shipped
    graph from the export cache", or "full run: the content key changed: weights: 1 changed: `fc.weight`"."""
    graph = _GRAPH[r.cache] + (f" [{r.cache_note}]" if r.cache_note else "")
    if r.reference:
        line = f"reused: float64 reference from the baseline (content key {(r.key or '')[:12]} unchanged); {graph}"
        if not r.outputs:
            line += "; exact output metrics not measured (the cached entry holds no float64 outputs)"
    else:
        line = f"full run: float64 reference computed, {_WHY[r.why]}" if r.why else "full run"
        if r.details:
            line += ": " + "; ".join(r.details)
        elif r.changed:
            line += ": " + ", ".join(str(p) for p in r.changed)
        line += f"; {graph}"
    if r.unseen:
        line += f"; the key sees {', '.join(r.unseen[:3])} by name only (--full checks them)"
    return line


def reuse_tally(models) -> str:
    """"; float64 reference reused for 3 of 4 models (content key unchanged)", or nothing when no model
    says (a report from result files, or an older writer's)."""
    said = [m.reuse for m in models if m.reuse is not None]
    if not said:
        return ""
    reused = sum(r.reference for r in said)
    return (f"; float64 reference reused for {reused} of {len(said)} model{'s' * (len(said) != 1)} "
            "(content key unchanged)")
