"""What moved inside each changed part of a content key, told from what the baseline recorded:
which tensors, which source files, which settings and versions (``Reuse.details``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate.core.runs import Meta
from gate.core.status import KeyPart
from gate.model.inputs import difference

if TYPE_CHECKING:
    from gate.formats.baseline import Baseline
    from gate.pipeline.content_key import ContentKey

SHOWN = 3  # names per line


def _names(names: list[str]) -> str:
    head = ", ".join(f"`{n}`" for n in names[:SHOWN])
    return head + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _moved(now: dict[str, str], then: dict[str, str]) -> list[str]:
    """``name old -> new`` for every entry that differs (``none`` where one side has none)."""
    return [f"{k} {then.get(k, 'none')} -> {now.get(k, 'none')}" for k in sorted(set(now) | set(then))
            if now.get(k) != then.get(k)]


def _tensors(now: Meta, then: Meta) -> str:
    a, b = now.tensor_digests or {}, then.tensor_digests or {}
    if not a or not b:
        return "weights: the parameters or buffers changed"
    moved = [n for n in a if n in b and a[n] != b[n]]
    added, gone = [n for n in a if n not in b], [n for n in b if n not in a]
    parts = [f"{len(moved)} changed: {_names(moved)}" if moved else "",
             f"{len(added)} new: {_names(added)}" if added else "", f"{len(gone)} gone: {_names(gone)}" if gone else ""]
    same = "the same tensors, the whole digest's rule changed"  # (``weights.RULE``)
    return "weights: " + ("; ".join(s for s in parts if s) or same)


def _part(part: KeyPart, now: ContentKey, then: ContentKey, meta: Meta, recorded: Meta) -> str:
    if part == KeyPart.CODE:
        if now.ops == then.ops:  # a renamed module's tensors are traced by their names
            return (f"code: the traced float32 forward changed ({now.ops:,} operations, as when the baseline was "
                    "made: an operation, an argument, a tensor's name or a module call differs)")
        return (f"code: the operations of the float32 forward changed ({now.ops:,} traced, {then.ops:,} when the "
                "baseline was made)")
    if part == KeyPart.SOURCE:
        # Not at the top: the judging side (a core install) has no onnx, which content_key's imports need.
        from gate.pipeline.content_key import FACTORY

        if FACTORY in then.sources and now.sources.get(FACTORY) != then.sources[FACTORY]:
            return "source: the model's factory changed (another function builds it)"
        moved = [m for m in sorted(set(now.sources) | set(then.sources))
                 if m != FACTORY and now.sources.get(m) != then.sources.get(m)]
        if moved:
            return f"source: {_names(moved)} changed"
        return ("source: the model's files changed" if FACTORY in then.sources
                else "source: the factory's name, which the baseline's parity-gate did not record")
    if part == KeyPart.WEIGHTS:
        return _tensors(meta, recorded)
    if part == KeyPart.INPUTS:
        return "inputs: " + (difference(recorded.inputs, meta.inputs or []) or "other values")
    if part in (KeyPart.EXPORT, KeyPart.TRANSFORM, KeyPart.REFERENCE):
        prefix = f"{part.value}."
        moved = _moved({k: v for k, v in now.settings.items() if k.startswith(prefix)},
                       {k: v for k, v in then.settings.items() if k.startswith(prefix)})
        return f"{part.value}: " + ("; ".join(m.removeprefix(prefix) for m in moved) or "its settings changed")
    if part == KeyPart.VERSIONS:
        return "versions: " + ("; ".join(_moved(now.versions, then.versions)) or "a package changed")
    if recorded.parity_gate != meta.parity_gate:
        return f"gate: parity-gate {recorded.parity_gate} -> {meta.parity_gate}"
    return "gate: parity-gate's own source changed (same version)"


def details(changed: list[KeyPart], now: ContentKey, then: ContentKey | None, meta: Meta,
            baseline: Baseline | None) -> list[str]:
    """One line per changed part (``now``/``then``: ``ContentKey``; ``baseline``: its ``Baseline``)."""
    if then is None or baseline is None:
        return []
    return [_part(p, now, then, meta, baseline.meta) for p in changed]
