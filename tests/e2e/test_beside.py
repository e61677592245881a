"""The float64 reference beside the export (``gate.pipeline.beside``): a forked child runs it while
the parent exports, with real exports, real ONNX Runtime sessions and real processes. What it hands
back judges the model as the reference run in sequence (before the export) does; a child that fails,
falls back to float32 or stalls changes nothing but where the reference ran (then after the export)."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from gate import env
from gate.pipeline import beside
from gate.runners import forked
from tests.support.stage_projects import E2E, check, states, update

pytestmark = pytest.mark.skipif(not forked.available(), reason="no fork here")


@pytest.fixture(autouse=True)
def beside_on(monkeypatch):
    """On, whatever the CPUs this machine has (``auto`` wants ``beside.AUTO_CPUS``)."""
    monkeypatch.setenv(env.BESIDE, "on")

MODEL = ('[[models]]\nname = "net"\nfactory = "beside_models:{factory}"\n'
         'inputs = [{{ name = "x", shape = [2, 3, 8, 8] }}]\n')


def project(tmp, factory: str, transform: str | None = None):
    shutil.copy(E2E / "beside_models.py", tmp / "beside_models.py")
    path = tmp / "parity-gate.toml"
    model = MODEL.format(factory=factory)
    if transform:
        model += f'transform = "beside_models:{transform}"\n'
    path.write_text('baseline-dir = "b"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n' + model)
    return path


def where(said: list[str]) -> str:
    """Where the reference ran, as the progress lines tell (the last line that starts it): beside the
    export, ``first`` (before the export or binding starts, where no child started) or ``here`` after it."""
    started = [i for i, s in enumerate(said) if "float64 reference on torch-cpu" in s]
    if beside.BESIDE in said[started[-1]]:
        return beside.BESIDE
    export = next((i for i, s in enumerate(said) if "exporting to ONNX" in s or "bound into it" in s),
                  len(said))
    return "first" if started[-1] < export else "here"


def layer_values(report: dict) -> dict[tuple, float]:
    """Each row's checked value, by provider, precision, layer and check."""
    return {(p["name"], p.get("precision"), r["layer"], r["check"]): r["value"]
            for p in report["models"][0]["providers"] for r in p["layers"] if r.get("value") is not None}


def test_a_reference_beside_the_export_judges_as_one_run_after_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    path = project(tmp_path, "plain")
    update(path)
    besides, said = check(path, full=True)
    assert where(said) == beside.BESIDE, said
    monkeypatch.setenv(env.BESIDE, "off")
    serial, said = check(path, full=True)
    assert where(said) == "first", said
    assert besides["verdict"] == serial["verdict"] == "pass"
    a, b = layer_values(besides), layer_values(serial)
    assert a.keys() == b.keys() and len(a) > 5
    for row, error in a.items():  # one thread or two: float64 noise, far below any limit
        assert error == pytest.approx(b[row], rel=1e-6, abs=1e-12), row


def test_a_float32_fallback_is_said_by_the_parent_as_in_sequence(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    path = project(tmp_path, "no_float64")
    said = update(path)
    assert any("float64 reference failed (RuntimeError); using float32" in s for s in said), said
    report, said = check(path, full=True)
    assert any("using float32" in s for s in said) and where(said) == "here"
    assert report["models"][0]["reference"]["dtype"] == "float32" and report["verdict"] == "pass"


def test_the_parent_does_not_wait_for_a_child_that_stalls(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    path = project(tmp_path, "stalls_beside")
    started = time.monotonic()
    update(path)
    report, said = check(path, full=True)
    assert time.monotonic() - started < 300  # the child sleeps 600 s: it was stopped, not waited for
    assert any(beside.BESIDE in s for s in said) and where(said) == "here" and report["verdict"] == "pass"


def test_a_child_starts_as_the_export_traces_or_new_weights_bind_and_judges_as_in_sequence(tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    path = project(tmp_path, "scaled", transform="after_the_child")
    said = update(path)
    assert any(beside.BESIDE in s for s in said), said  # a fresh export: the reference beside it
    monkeypatch.setenv("BESIDE_TEST_SCALE", "1.5")
    # The binding of this small model can end before the child has counted a layer, and a child with no
    # pace is stopped (``beside.wait_or_stop``): the transform keeps the parent until the child has run.
    monkeypatch.setenv("BESIDE_TEST_RAN", str(tmp_path / "ran"))
    store = tmp_path / "store"
    shutil.copytree(store, tmp_path / "base-store")  # each check starts from the base's store
    report, said = check(path)  # only a weight changed: its new weights bound into the stored structure
    assert states(report)["structure"] == "hit" and any("bound into it" in s for s in said), said
    assert where(said) == beside.BESIDE, said
    shutil.rmtree(store)
    shutil.copytree(tmp_path / "base-store", store)
    monkeypatch.setenv(env.BESIDE, "off")
    monkeypatch.delenv("BESIDE_TEST_RAN")
    serial, said = check(path)
    assert states(serial)["structure"] == "hit" and where(said) == "first", said
    assert report["verdict"] == serial["verdict"] and report["first_regression"] == serial["first_regression"]
    a, b = layer_values(report), layer_values(serial)
    assert a.keys() == b.keys() and len(a) > 5
    for row, error in a.items():
        assert error == pytest.approx(b[row], rel=1e-6, abs=1e-12), row


CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


@pytest.mark.skipif(CPUS < beside.AUTO_CPUS, reason="auto starts no child on fewer CPUs")
def test_auto_starts_a_child_only_where_the_trace_can_hide_the_reference(tmp_path, monkeypatch):
    monkeypatch.setenv(env.BESIDE, "auto")
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "store"))
    deep_said = update(project(tmp_path, "deep"))  # 40 blocks: a trace of some 170 operations
    assert any(beside.BESIDE in s for s in deep_said), deep_said
    (tmp_path / "short").mkdir()
    short_said = update(project(tmp_path / "short", "plain"))  # a handful: the child could not finish in it
    assert not any(beside.BESIDE in s for s in short_said) and where(short_said) == "first", short_said
