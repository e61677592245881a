"""The plan's store writes (gate/pipeline/stages.py) with a real graph file and a real store: a stage's
output is stored only once the stages that read it are done (storing hard-links its files, and onnx
refuses external data with more than one link), and a write's alarm reaches the run."""

from __future__ import annotations

import onnx

from gate.core.runs import ModelRun, OnnxSite
from gate.core.status import CacheState, FullWhy, KeyPart, Stage
from gate.export.record import Graph, GraphFacts
from gate.pipeline.content_key import ContentKey
from gate.pipeline.stages import Plan, ReusePolicy
from gate.store import Store
from tests.unit.test_store import graph

KEY = ContentKey("k" * 64, {p.value: "0" * 16 for p in KeyPart}, 1, stages={"export": "e" * 64, "reference": "r" * 64})


def exported(folder, scale: float = 2.0) -> Graph:
    path = graph(folder, scale)
    facts = GraphFacts.of(onnx.load(str(path)), "dynamo", None, 18)
    return Graph.of_file(path, facts, {"layer": OnnxSite("value", "y")}, [])


def plan(tmp_path, read: bool = True) -> tuple[Plan, Store]:
    store = Store(tmp_path / "store")
    p = ReusePolicy(read, store, None if read else FullWhy.FORCED).plan(None)
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
