"""The first ONNX Runtime provider started beside the float64 reference (``gate.commands.ahead``):
its worker captures while the reference still runs in the child, and judges once the reference is
in the bundle. Real exports, real processes, real ONNX Runtime sessions: what it judges is what the
provider started after the reference judges, and a reference that does not fit the capture drops it."""

from __future__ import annotations

import json
import shutil

import pytest

from gate import env
from gate.runners import forked
from tests.e2e.test_beside import layer_values, project
from tests.support.stage_projects import E2E, check, states, update

pytestmark = pytest.mark.skipif(not forked.available(), reason="no fork here")
AHEAD = "started beside the float64 reference"


@pytest.fixture(autouse=True)
def ahead_on(monkeypatch, tmp_path):
    """Child and provider ahead on, whatever the CPUs; every worker's job logged."""
    monkeypatch.setenv(env.BESIDE, "on")
    monkeypatch.setenv(env.AHEAD, "on")
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("PARITY_GATE_WORKER_HOOK", "ahead_hooks:log")
    monkeypatch.setenv("PYTHONPATH", str(E2E))
    monkeypatch.setenv("AHEAD_TEST_JOBS", str(tmp_path / "jobs.jsonl"))
    monkeypatch.setenv("AHEAD_TEST_STARTED", str(tmp_path / "started"))


def jobs(tmp_path) -> list[dict]:
    """The workers' jobs since the last call."""
    log = tmp_path / "jobs.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    (tmp_path / "started").unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


def same_judgement(a: dict, b: dict) -> None:
    assert a["verdict"] == b["verdict"] and a["first_regression"] == b["first_regression"]
    x, y = layer_values(a), layer_values(b)
    assert x.keys() == y.keys() and len(x) > 5
    for row, value in x.items():  # the worker's threads, and the reference's: rounding noise at most
        assert value == pytest.approx(y[row], rel=1e-5, abs=1e-9), row


def test_a_provider_started_beside_the_reference_judges_as_one_started_after_it(tmp_path, monkeypatch):
    path = project(tmp_path, "waits_for_ahead")
    update(path)
    jobs(tmp_path)
    ahead, said = check(path, full=True)
    assert any(AHEAD in s for s in said), said
    assert any("captured; waiting for the float64 reference" in s for s in said), said
    assert jobs(tmp_path) == [{"provider": "CPUExecutionProvider", "ahead": 1}]  # one worker: its run stood
    monkeypatch.setenv(env.AHEAD, "off")
    after, said = check(path, full=True)
    assert not any(AHEAD in s for s in said)
    assert jobs(tmp_path) == [{"provider": "CPUExecutionProvider", "ahead": None}]
    assert ahead["verdict"] == "pass"
    same_judgement(ahead, after)


def test_a_reference_that_does_not_fit_the_capture_drops_it_and_the_provider_runs_again(tmp_path,
                                                                                       monkeypatch):
    path = project(tmp_path, "narrower_in_float64")  # a layer's element count in float64 is not the probe's
    update(path)
    jobs(tmp_path)
    ahead, said = check(path, full=True)
    assert any(AHEAD in s for s in said), said
    assert jobs(tmp_path) == [{"provider": "CPUExecutionProvider", "ahead": 1},
                              {"provider": "CPUExecutionProvider", "ahead": None}]  # dropped, run again
    monkeypatch.setenv(env.AHEAD, "off")
    after, _ = check(path, full=True)
    same_judgement(ahead, after)


def test_a_weight_change_judged_ahead_names_what_the_run_in_sequence_names(tmp_path, monkeypatch):
    path = project(tmp_path, "waits_for_ahead")
    update(path)
    store = tmp_path / "store"
    shutil.copytree(store, tmp_path / "base-store")  # each check starts from the base's store
    monkeypatch.setenv("BESIDE_TEST_SCALE", "1.5")
    path.write_text(path.read_text().replace("waits_for_ahead", "scaled_waits_for_ahead"))
    jobs(tmp_path)
    ahead, said = check(path)  # only a weight changed: bound into the stored structure, the child beside
    assert states(ahead)["structure"] == "hit" and any(AHEAD in s for s in said), said
    assert [j["ahead"] for j in jobs(tmp_path)] == [1]
    shutil.rmtree(store)
    shutil.copytree(tmp_path / "base-store", store)
    monkeypatch.setenv(env.AHEAD, "off")
    after, _ = check(path)
    assert ahead["verdict"] == "regressed"  # the float64 reference moved: a real change of the model
    same_judgement(ahead, after)
