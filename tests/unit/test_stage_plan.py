"""The plan (gate/pipeline/stages.py) with a real graph file and a real store: the one decision every
stage asks (``uncached``), reason by reason; a stage's output is stored only once the stages that
read it are done (storing hard-links its files, and onnx refuses external data with more than one
link), and a write's alarm reaches the run."""

from __future__ import annotations

import dataclasses

import onnx
import pytest

from gate.core.background import Background
from gate.core.runs import ModelRun, OnnxSite
from gate.core.status import CacheState, FullWhy, KeyPart, Stage
from gate.export.record import Graph, GraphFacts
from gate.pipeline.content_key import ContentKey, transform_key
from gate.pipeline.stages import Plan, ReusePolicy, Uncached, uncached
from gate.store import Store
from tests.support.verdicts import baseline
from tests.unit.test_store import graph

KEY = ContentKey("k" * 64, {p.value: "0" * 16 for p in KeyPart}, 1, stages={"export": "e" * 64, "reference": "r" * 64})


def exported(folder, scale: float = 2.0) -> Graph:
    path = graph(folder, scale)
    facts = GraphFacts.of(onnx.load(str(path)), "dynamo", None, 18)
    return Graph.of_file(path, facts, {"layer": OnnxSite("value", "y")}, [])


def plan(tmp_path, read: bool = True) -> tuple[Plan, Store]:
    store = Store(tmp_path / "store")
    p = ReusePolicy(store, None if read else FullWhy.FORCED).plan(None)
    p.key = KEY
    return p, store


def test_an_output_is_stored_only_once_released(tmp_path):
    p, store = plan(tmp_path)
    run = ModelRun("m")
    p.export(run, lambda: (exported(tmp_path / "g"), None))
    assert run.reuse.stage(Stage.EXPORT).state == CacheState.MISS
    assert store.get(Stage.EXPORT, "e" * 64).state == CacheState.MISS  # not yet: a transform may still read it
    p.release()
    p.finish()
    assert store.get(Stage.EXPORT, "e" * 64).state == CacheState.HIT
    again = ModelRun("m")
    graph_again = p.export(again, lambda: (exported(tmp_path / "never"), None))
    assert again.reuse.stage(Stage.EXPORT).reused and graph_again.sites == {"layer": OnnxSite("value", "y")}


def test_a_write_that_meets_another_output_puts_the_alarm_on_the_run(tmp_path):
    first, _ = plan(tmp_path)
    first.export(ModelRun("m"), lambda: (exported(tmp_path / "a", 2.0), None))
    first.finish()
    full, store = plan(tmp_path, read=False)
    run = ModelRun("m")
    full.export(run, lambda: (exported(tmp_path / "b", 3.0), None))
    full.finish()
    [alarm] = run.reuse.alarms
    assert (alarm.stage, alarm.key, run.reuse.stage(Stage.EXPORT).state) == (Stage.EXPORT, "e" * 64, CacheState.ALARM)
    assert "the graph differs" in alarm.note
    assert store.get(Stage.EXPORT, "e" * 64).state == CacheState.ALARM


def _bug() -> str:
    raise RuntimeError("a bug in a write")


def test_a_write_the_store_refuses_is_a_miss_and_a_bug_in_a_write_is_raised(tmp_path):
    """A store that cannot be written costs a miss next time; any other exception in a write is a bug,
    raised by ``finish`` rather than lost with the alarm the write would have raised."""
    (tmp_path / "store").write_text("")  # the store's folder cannot be made: OSError in the write
    refused, store = plan(tmp_path)
    run = ModelRun("m")
    refused.export(run, lambda: (exported(tmp_path / "a"), None))
    refused.finish()
    assert store.get(Stage.EXPORT, "e" * 64).state == CacheState.MISS and not run.reuse.alarms
    buggy, _ = plan(tmp_path / "b")
    broken = exported(tmp_path / "c")
    broken.digest = Background(_bug)
    buggy.export(ModelRun("m"), lambda: (broken, None))
    with pytest.raises(RuntimeError, match="a bug in a write"):
        buggy.finish()


def test_each_reason_a_stage_cannot_take_its_output(tmp_path):
    store, ref = Store(tmp_path / "store"), "a" * 64
    reads = ReusePolicy(store)
    recorded = baseline()
    recorded = dataclasses.replace(recorded, meta=dataclasses.replace(recorded.meta, content_key={
        **KEY.to_dict(), "stages": {"export": "e" * 64, "reference": ref}}))

    def why(key: str | None = ref, policy: ReusePolicy = reads, stage: Stage = Stage.REFERENCE, b=recorded,
            **facts):
        return uncached(stage, key, policy, b, **facts)

    assert why() is None and why("b" * 64, stage=Stage.EXPORT) is None  # taken: the baseline's, the store's
    assert why(stage=Stage.EXPORT, policy=ReusePolicy(None)) == Uncached(CacheState.OFF)  # no store
    assert why(stage=Stage.EXPORT, policy=ReusePolicy(store, FullWhy.UPDATE)) == \
        Uncached(CacheState.BYPASSED, FullWhy.UPDATE)  # read off
    assert why(None, stage=Stage.EXPORT) == Uncached(CacheState.UNKEYED, FullWhy.UNKEYABLE)  # no key
    assert why(transform_key(KEY, "d" * 64), stage=Stage.TRANSFORM) == \
        Uncached(CacheState.UNKEYED, FullWhy.UNKEYABLE)  # a transform without declared inputs
    assert why(policy=ReusePolicy(store, FullWhy.FORCED), random=True) == \
        Uncached(CacheState.BYPASSED, FullWhy.FORCED)  # forced, before all else
    assert why(policy=ReusePolicy(None, FullWhy.FORCED)) == Uncached(CacheState.OFF, FullWhy.FORCED)
    assert why(b=None) == Uncached(CacheState.MISS, FullWhy.NO_BASELINE)
    assert why(b=baseline()) == Uncached(CacheState.MISS, FullWhy.NO_KEY)
    assert why("b" * 64) == Uncached(CacheState.MISS, FullWhy.KEY_CHANGED)
    assert why(random=True) == Uncached(CacheState.UNKEYED, FullWhy.UNKEYABLE)
    assert why(gradients=True) == Uncached(CacheState.UNKEYED, FullWhy.GRADIENTS)
    assert why(training=True) == Uncached(CacheState.UNKEYED, FullWhy.TRAINING)
    assert why(outputs=False) == Uncached(CacheState.MISS, FullWhy.OUTPUTS)
    assert why(outputs=False, policy=ReusePolicy(None)) == Uncached(CacheState.OFF, FullWhy.OUTPUTS)
    store.raise_alarm(Stage.REFERENCE, ref, None, None, "moved")
    assert why() == Uncached(CacheState.ALARM, FullWhy.ALARM)  # an alarmed key
