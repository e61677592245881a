"""The model's own casts below float32 (float16, bfloat16), counted per module call as the reference promotes
them to float64 (``gate.runners.promotion``). Where a count differs from the baseline's, what ships computes
at another precision though no reference layer moves: a change of the model (docs/verdict.md#verdict). A
cast to float32 is none in a float32 model (eager attention's ``softmax(dtype=float32)``)."""

from __future__ import annotations

from collections.abc import Sequence

from gate.core.layers import module_of, renamed_modules
from gate.core.runs import ModelRun
from gate.formats.baseline import Baseline


def position(order: Sequence[str], call: str) -> int:
    """Where a module call sits in execution order: its first layer (a call's layers are its name, or its
    name with an element suffix); past the end where none ran."""
    return next((i for i, name in enumerate(order) if name == call or name.startswith(call + "[")),
                len(order))


def changed(run: ModelRun, baseline: Baseline,
            renames: dict[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """Module calls whose casts changed: (baseline, now), in execution order. ``renames``: the verdict's
    (layers now -> the baseline's), so a module renamed or wrapped keeps its casts."""
    if baseline.meta.narrowed is None or run.meta.narrowed is None:
        return {}  # a baseline older than the count (its ``promoted`` counts float32 casts too)
    before, now = baseline.meta.narrowed, _as_baseline(run.meta.narrowed, renames or {})
    order = [x.name for x in run.layers]
    calls = {call: (before.get(call, 0), now.get(call, 0)) for call in {*before, *now}
             if before.get(call, 0) != now.get(call, 0)}
    return dict(sorted(calls.items(), key=lambda kv: (position(order, kv[0]), kv[0])))


def _as_baseline(counts: dict[str, int], renames: dict[str, str]) -> dict[str, int]:
    """Counts per module call, each call under its baseline name where the verdict renamed it."""
    modules = renamed_modules(renames)
    out: dict[str, int] = {}
    for call, n in counts.items():
        module = module_of(call)
        was = renames.get(call) or modules.get(module, module) + call[len(module):]
        out[was] = out.get(was, 0) + n
    return out
