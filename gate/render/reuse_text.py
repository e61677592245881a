"""One line on what a check took from each stage's key and why, or why it ran the stage, and one
line per soundness alarm: the console and the Markdown comment say the same words (plain text;
each renderer escapes it)."""

from __future__ import annotations

from gate.core.reuse import Alarm, Reuse, StageRun
from gate.core.status import CacheState, FullWhy, Stage
from gate.verdict.types import ModelVerdict

_WHY = {
    FullWhy.FORCED: "--full asked for it",
    FullWhy.UPDATE: "update-baseline always runs it",
    FullWhy.NO_BASELINE: "no baseline to take it from",
    FullWhy.NO_KEY: "the baseline records no stage keys (re-create it with update-baseline to reuse)",
    FullWhy.KEY_CHANGED: "its key changed",
    FullWhy.REWRITTEN: "this change rewrote the baseline file, whose keys cannot vouch for its own numbers",
    FullWhy.UNKEYABLE: "no key can vouch for this model",
    FullWhy.OUTPUTS: "output-tolerance needs the float64 outputs, which the store does not hold",
    FullWhy.GRADIENTS: "gradients are judged, and the key traces the forward pass only",
    FullWhy.TRAINING: "the factory left modules in training mode, whose audit the key cannot vouch for",
    FullWhy.ALARM: "its key once gave two different outputs here",
}

# What the store did, said alike of an export and a transform.
_STORE = {
    CacheState.MISS: "not in the store; stored now",
    CacheState.CORRUPT: "the stored entry failed its checks; replaced",
    CacheState.BYPASSED: "the store is not read on a full run",
    CacheState.OFF: "no store",
    CacheState.ALARM: "its key is under an alarm: neither read nor stored",
}
_EXPORT = {CacheState.HIT: "exported graph from the store", CacheState.UNKEYED: "exported (no key)"}
_TRANSFORM = {CacheState.HIT: "its output from the store (its declared inputs unchanged)",
              CacheState.UNKEYED: "run (it reads what the gate cannot see: on every check)"}


def _stage(s: StageRun, transform: str | None) -> str:
    if s.stage == Stage.EXPORT:
        text = _EXPORT.get(s.state) or f"exported ({_STORE[s.state]})"
    else:
        text = f"transform `{transform}` " + (_TRANSFORM.get(s.state) or f"run ({_STORE[s.state]})")
    return text + (f" [{s.note}]" if s.note and s.state != CacheState.ALARM else "")


def reuse_line(r: Reuse) -> str:
    """"reused: float64 reference from the baseline (its key 3a93016fddea unchanged); exported graph
    from the store", or "full run: float64 reference computed, its key changed: weights: 1 changed:
    `fc.weight`; exported (not in the store; stored now)"."""
    ref = r.stage(Stage.REFERENCE)
    if r.reference:
        key = (ref.key if ref is not None and ref.key else r.key or "")[:12]
        parts = [f"reused: float64 reference from the baseline (its key {key} unchanged)"]
    else:
        head = f"full run: float64 reference computed, {_WHY[r.why]}" if r.why else "full run"
        if r.details:
            head += ": " + "; ".join(r.details)
        elif r.changed:
            head += ": " + ", ".join(str(p) for p in r.changed)
        parts = [head]
    structure, bound = r.stage(Stage.STRUCTURE), False
    for s in r.stages:
        if s.stage == Stage.EXPORT and not s.reused and structure is not None and structure.reused:
            parts.append("graph from the stored structure with these weights bound (not exported again)")
            bound = True
        elif s.stage in (Stage.EXPORT, Stage.TRANSFORM):
            parts.append(_stage(s, r.transform))
    # a graph the weights were bound into moved with them: said once, as the weights that changed
    if r.shipped is not None and r.shipped.changed and not (bound and r.transform is None):
        parts.append(f"the shipped graph changed since the baseline ({(r.shipped.baseline or '')[:12]} -> "
                     f"{(r.shipped.digest or '')[:12]}): the providers judged the new one")
    if r.reference and not r.outputs:
        parts.append("exact output metrics not measured (the store holds no float64 outputs under the reference's key)")
    if r.unseen:
        parts.append(f"the key sees {', '.join(r.unseen[:3])} by name only (--full checks them)")
    return "; ".join(parts)


def alarm_line(a: Alarm) -> str:
    """"soundness alarm: the export stage's key 1a2b3c4d5e6f gave a second, different output (...)"."""
    return (f"soundness alarm: the {a.stage} stage's key {a.key[:12]} gave a second, different output"
            f"{f' ({a.note})' if a.note else ''}: what the {a.stage} reads is not all in its key, so the key is never "
            "reused on this machine; outputs reused under it before may not be what ships")


def reuse_tally(models: list[ModelVerdict]) -> str:
    """"; float64 reference reused for 3 of 4 models (keys unchanged)", and the soundness alarms, or
    nothing when none was reused and no alarm rang (every reference ran: nothing to say)."""
    said = [m.reuse for m in models if m.reuse is not None]
    reused = sum(r.reference for r in said)
    alarms = sum(len(r.alarms) for r in said)
    return ((f"; float64 reference reused for {reused} of {len(models)} model{'s' * (len(models) != 1)} "
             "(keys unchanged)" if reused else "")
            + (f"; {alarms} soundness alarm{'s' * (alarms != 1)}" if alarms else ""))
