"""Soundness alarms onto a run (its stage says so, the report lists the alarm), and the alarm the
judge's own verdict raises: a float64 reference recomputed under the key its baseline records that
moved. The store raises the others, when a key meets a second output (``gate.store``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gate.core.reuse import Alarm
from gate.core.runs import ModelRun
from gate.core.status import CacheState, Check, FullWhy, Role, Stage

if TYPE_CHECKING:
    from gate.formats.baseline import Baseline
    from gate.store import Store
    from gate.verdict.types import ModelVerdict


def alarm(run: ModelRun, raised: Alarm) -> None:
    reuse = run.reuse
    assert reuse is not None
    reuse.stages = [replace(s, state=CacheState.ALARM, note=raised.note) if s.stage == raised.stage else s
                    for s in reuse.stages]
    if raised not in reuse.alarms:
        reuse.alarms.append(raised)


def reference_alarms(verdicts: list[ModelVerdict], runs: list[ModelRun], baselines: list[Baseline | None],
                     store: Store | None) -> None:
    """An alarm on a float64 reference computed under the key its baseline records that moved at a
    forward layer: what it reads is not all in its key (a rebuilt C++ extension, a process setting)."""
    from gate.pipeline.content_key import ContentKey

    for verdict, run, baseline in zip(verdicts, runs, baselines, strict=True):
        reuse, raw = run.reuse, baseline.meta.content_key if baseline is not None else None
        if reuse is None or reuse.reference or reuse.why == FullWhy.UNKEYABLE or not raw:
            continue
        stage = reuse.stage(Stage.REFERENCE)
        key = stage.key if stage is not None else None
        if key is None or key != ContentKey.from_dict(raw).stage(Stage.REFERENCE):
            continue
        ref = next((p for p in verdict.providers if p.role == Role.REFERENCE), None)
        fr = ref.first_regression if ref is not None else None
        if fr is None or fr.check != Check.REFERENCE_DRIFT or fr.layer.startswith("grad:"):
            continue
        note = f"the float64 reference moved at `{fr.layer}` ({fr.value:.3g}) under the key its baseline records"
        raised = (store.raise_alarm(Stage.REFERENCE, key, None, None, note) if store is not None else
                  Alarm(Stage.REFERENCE, key, None, None, note))
        alarm(run, raised)
        verdict.reuse = run.reuse
