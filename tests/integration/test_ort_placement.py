"""gate.runners.ort_placement on real CPU EP sessions: ONNX Runtime's assignment record and a
profiled run's kernels (the fallback for builds without the record) place every node of the
examples on the CPU EP; a profile whose kernels report another EP feeds the placement audit."""

from __future__ import annotations

import copy

import numpy as np
import onnx
import pytest

from gate import commands
from gate.config import load_config
from gate.formats.results import Bundle
from gate.runners import ort_placement, ort_session
from gate.verdict.placement import placement_audit
from tests.support.projects import examples_project

CPU = "CPUExecutionProvider"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("placement")
    cfg = load_config(examples_project(tmp))
    commands.export_models(cfg, cfg.select_models(["tiny-cnn"]), (), tmp / "export")
    return Bundle(tmp / "export" / "tiny-cnn")


def session_and_feed(bundle, spec):
    model = onnx.load(str(bundle.model)).SerializeToString()
    session = spec.open(model, "test", record=True)
    return model, session, dict(zip([i.name for i in session.get_inputs()], bundle.inputs(), strict=True))


def test_assignment_record_places_every_node_on_the_cpu_ep(bundle):
    spec = ort_session.SessionSpec(CPU)
    model, session, feed = session_and_feed(bundle, spec)
    record = ort_placement.placement(session, spec, model, feed, "test")
    graph_nodes = len(onnx.load(str(bundle.model)).graph.node)
    assert record["by_provider"] == {CPU: record["nodes"]} and 0 < record["nodes"] <= graph_nodes
    assert record["fallback_nodes"] == [] and "source" not in record and "options" not in record


def test_a_profiled_run_gives_the_executed_kernels_per_ep(bundle):
    spec = ort_session.SessionSpec(CPU)
    model, _, feed = session_and_feed(bundle, spec)
    events = ort_placement.profile(spec, model, feed, "test")
    record = ort_placement.from_profile(events, CPU)
    assert record["source"] == "profile" and record["by_provider"] == {CPU: record["nodes"]} and record["nodes"] > 3
    # A TensorRT run that gave two kernels to the CPU EP reports them so; the audit names them.
    trt = copy.deepcopy(events)
    kernels = [e for e in trt if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    for e in kernels:
        e["args"]["provider"] = "TensorrtExecutionProvider"
    before = ort_placement.from_profile(trt, "TensorrtExecutionProvider")
    gave_up = {e["name"] for e in kernels[:2]}
    for e in trt:
        if e.get("name") in gave_up:
            e["args"]["provider"] = CPU
    after = ort_placement.from_profile(trt, "TensorrtExecutionProvider")
    assert after["by_provider"][CPU] == 2 and len(after["fallback_nodes"]) == 2
    [audit] = placement_audit("TensorrtExecutionProvider", before, after, "fail")
    assert "2 more node(s) fall back to another EP" in audit.message and f"now on {CPU} +2" in audit.message


def test_only_options_that_change_placement_or_numerics_are_recorded(bundle):
    spec = ort_session.SessionSpec(CPU)
    _, session, _ = session_and_feed(bundle, spec)
    assert ort_placement.recorded_options(CPU, session.get_provider_options()) == {}
    # get_provider_options() of a TensorRT session, as ONNX Runtime returns them: strings.
    trt = {"TensorrtExecutionProvider": {"device_id": "0", "trt_fp16_enable": "1", "trt_int8_enable": "0",
                                         "trt_engine_cache_enable": "1", "trt_engine_cache_path": "/runner/cache",
                                         "trt_max_workspace_size": "1073741824"}}
    assert ort_placement.recorded_options("TensorrtExecutionProvider", trt) == {
        "trt_fp16_enable": "1", "trt_int8_enable": "0", "trt_engine_cache_enable": "1"}


def test_the_runner_records_placement_with_the_shipped_graph(bundle):
    spec = ort_session.SessionSpec(CPU)
    result = ort_session.run(onnx.load(str(bundle.model)), spec, bundle.inputs(), [], "test", timing_runs=1)
    assert result.placement["by_provider"] == {CPU: result.placement["nodes"]}
    assert np.isfinite(result.latency_ms)
