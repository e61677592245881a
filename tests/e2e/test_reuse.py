"""Stages reused under their keys (docs/verdict.md#stages), with real exports, real ONNX Runtime
sessions and real files. A check whose reference key matches its baseline's takes the float64
reference from the baseline, and the export from the store under the export's key; every provider
still runs and is judged. A change of anything a stage reads changes that stage's key: the stage
reruns, the verdict follows, and the report names the part."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from gate.commands.judging import load_one
from gate.config import load_config
from gate.core.status import Stage
from gate.export.record import Graph
from gate.formats.baseline import read_baseline, write_baseline
from gate.pipeline.run import run_model
from gate.pipeline.stages import ReusePolicy
from gate.store import MANIFEST, Store, store_dir
from tests.conftest import run_cli
from tests.support.stage_projects import (
    EXPORTING,
    FULL,
    check,
    project,
    reuse_of,
    runtimes,
    stage_key,
    states,
    update,
    weights,
)


@pytest.fixture
def made(tmp_path, monkeypatch) -> Path:
    """A project with its baseline (and the export cache entry update-baseline stores)."""
    monkeypatch.delenv("REUSE_TEST_WEIGHTS", raising=False)
    path = project(tmp_path)
    update(path)
    return path


def entry_folder(report: dict) -> Path:
    return store_dir() / "export" / stage_key(report, "export")


# the key matches -------------------------------------------------------------------------


def test_an_unchanged_model_reuses_the_reference_and_the_cached_graph(made):
    report, said = check(made)
    assert report["verdict"] == "pass", report["first_regression"]
    reuse = reuse_of(report)
    assert (reuse["reference"], reuse["cache"], reuse["why"], reuse["changed"]) == (True, "hit", None, [])
    assert states(report) == {"export": "hit", "reference": "hit"}
    assert not any(FULL in s or EXPORTING in s for s in said), said
    # Every provider ran and was judged: torch-cpu from the probe's forward, ONNX Runtime on the cached graph.
    ran = runtimes(report)
    assert ran["torch-cpu"]["checked"] > 0 and ran["CPUExecutionProvider"]["checked"] > 0
    # update-baseline stored the float64 outputs with the graph: the exact output metrics are measured.
    assert reuse["outputs"] and any(r.get("exact") for r in ran["CPUExecutionProvider"]["layers"])


def test_a_cold_cache_exports_but_still_reuses_the_reference(made, tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "cold"))
    report, said = check(made)
    reuse = reuse_of(report)
    assert report["verdict"] == "pass" and (reuse["reference"], reuse["cache"]) == (True, "miss")
    assert any(EXPORTING in s for s in said) and not any(FULL in s for s in said)
    assert reuse["outputs"] is False  # no float64 run: no float64 outputs to measure against
    again, said = check(made)
    assert reuse_of(again)["cache"] == "hit" and not any(EXPORTING in s for s in said)


def test_the_key_holds_across_processes_and_the_console_and_comment_say_what_was_reused(made):
    result = run_cli("check", "--verbose", "--json", "r.json", "--markdown", "r.md", cwd=made.parent)
    assert result.returncode == 0, result.stderr
    reuse = reuse_of(json.loads((made.parent / "r.json").read_text()))
    assert reuse["reference"] and reuse["cache"] == "hit"
    key = next(s["key"] for s in reuse["stages"] if s["stage"] == "reference")
    line = f"reused: float64 reference from the baseline (its key {key[:12]} unchanged); exported graph from the store"
    assert line in result.stdout
    comment = (made.parent / "r.md").read_text()
    assert f"♻️ {line}" in comment and "float64 reference reused for 1 of 1 model (keys unchanged)" in comment


def test_a_stored_graph_whose_numbers_moved_is_never_served_and_the_reference_is_still_reused(made, tmp_path,
                                                                                             monkeypatch):
    """A stored graph whose numbers moved (its manifest rewritten to match) is proved against the
    digests on the hit: its digest is not the one its entry records, so the entry is corrupt and
    replaced, the graph is exported afresh, the providers run on it and pass, and the float64 reference
    is still the baseline's. (A store of its own: no other test may read the planted graph.)"""
    import onnx
    from onnx import numpy_helper

    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "own"))
    first, _ = check(made)
    folder = entry_folder(first)
    proto = onnx.load(str(folder / "model.onnx"))
    init = next(t for t in proto.graph.initializer if t.name == "fc.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * np.float32(1.01), init.name))
    onnx.save(proto, str(folder / "model.onnx"))
    manifest = json.loads((folder / MANIFEST).read_text())
    import hashlib

    data = (folder / "model.onnx").read_bytes()
    manifest["files"]["model.onnx"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    report, _ = check(made)
    assert reuse_of(report)["reference"] and reuse_of(report)["cache"] == "corrupt"
    assert "its entry records" in reuse_of(report)["cache_note"] and not reuse_of(report).get("alarms")
    assert report["verdict"] == "pass", report["first_regression"]
    assert runtimes(report)["CPUExecutionProvider"]["status"] == "pass"


def _weight_byte(folder: Path) -> tuple[Path, int]:
    """The weights file of an entry and the offset of its first tensor's first byte."""
    import onnx

    from gate.export import saved

    proto = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    [first, *_] = saved.external(proto)
    return folder / saved.DATA, saved.region(first, folder)[1]


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flip a byte", "flip a weight's byte", "truncate", "remove the graph",
                                    "garbage manifest"])
def test_a_damaged_store_entry_is_a_miss_never_a_wrong_graph(made, damage, tmp_path, monkeypatch):
    """A weights file the graph's digest proves (its bytes not hashed again against the manifest) is
    damaged all the same: the digest differs from the baseline's, the manifest says which file."""
    from gate.export import saved

    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setattr(saved, "INLINE_TENSOR_BYTES", 256)  # weights past 256 bytes go to the data file
    first, _ = check(made)
    folder = entry_folder(first)
    graph = folder / "model.onnx"
    if damage == "flip a weight's byte":
        _flip(*_weight_byte(folder))
    elif damage == "flip a byte":
        data = bytearray(graph.read_bytes())
        data[len(data) // 2] ^= 0xFF
        graph.write_bytes(bytes(data))
    elif damage == "truncate":
        graph.write_bytes(graph.read_bytes()[:100])
    elif damage == "remove the graph":
        graph.unlink()
    else:
        (folder / MANIFEST).write_text("{not json")
    report, said = check(made)
    reuse = reuse_of(report)
    assert report["verdict"] == "pass", report["first_regression"]
    assert (reuse["reference"], reuse["cache"]) == (True, "corrupt") and reuse["cache_note"]
    if damage == "flip a weight's byte":  # the store records its size; the graph's digest proves its bytes
        assert "the graph in model.onnx and its weights digest to" in reuse["cache_note"]
    # Computed again: the stored structure with the weights bound (the graph's entry was the damaged one).
    assert states(report)["structure"] == "hit" and any("these weights bound into it" in s for s in said)
    key = stage_key(report, "export")
    entry = Store(store_dir()).get(Stage.EXPORT, key, Graph.proves).entry  # replaced by a whole entry
    assert entry is not None and Graph.from_entry(entry).unproven(entry) is None


# the whole path, and why --------------------------------------------------------------------


def test_full_runs_the_whole_path_from_the_flag_and_the_environment(made, monkeypatch):
    result = run_cli("check", "--full", "--json", "r.json", cwd=made.parent)
    assert result.returncode == 0, result.stderr
    reuse = reuse_of(json.loads((made.parent / "r.json").read_text()))
    assert (reuse["reference"], reuse["why"], reuse["cache"], reuse["changed"]) == (False, "forced", "bypassed", [])
    monkeypatch.setenv("PARITY_GATE_FULL", "1")
    report, said = check(made)
    assert reuse_of(report)["why"] == "forced" and any(FULL in s for s in said) and any(EXPORTING in s for s in said)


def test_the_ci_cache_key_follows_the_keys_baselines_record(made, tmp_path):
    """``parity-gate cache key`` (the action's actions/cache key) reads only the baselines: the same
    for the same recorded keys, another once a baseline records another key or none."""
    def key() -> str:
        result = run_cli("cache", "key", cwd=made.parent)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    first = key()
    assert len(first) == 32 and int(first, 16) >= 0 and key() == first
    path = made.parent / "b" / "net.msgpack.zst"
    baseline = read_baseline(path)
    baseline.meta.content_key = {**baseline.meta.content_key, "key": "0" * 64}
    write_baseline(path, baseline)
    assert key() != first
    path.unlink()
    assert key() not in (first, "")
    listed = run_cli("cache", "dir", cwd=made.parent, env={"PARITY_GATE_CACHE_DIR": str(tmp_path / "c")})
    assert listed.stdout.strip() == str(tmp_path / "c")
    off = run_cli("cache", "dir", cwd=made.parent, env={"PARITY_GATE_CACHE_DIR": "off"})
    assert off.returncode == 2 and "PARITY_GATE_CACHE_DIR=off" in off.stderr


def test_a_model_left_in_training_mode_runs_its_reference_and_no_audit_outlives_the_fix(tmp_path, monkeypatch):
    """The audit of a model left partly in training mode runs a forward the probe (eval) never
    traced: its reference runs. Once the factory is fixed the key matches and the baseline's audit
    is not carried over."""
    monkeypatch.setenv("REUSE_TEST_LEFT_TRAINING", "1")
    path = project(tmp_path)
    update(path)
    report, said = check(path)
    assert (reuse_of(report)["reference"], reuse_of(report)["why"]) == (False, "training")
    assert any(a["check"] == "training-mode" for a in report["models"][0]["audits"])
    monkeypatch.delenv("REUSE_TEST_LEFT_TRAINING")
    report, said = check(path)
    assert reuse_of(report)["reference"] is True
    assert not any(a["check"] == "training-mode" for a in report["models"][0]["audits"])


def test_update_baseline_always_runs_the_whole_path(made):
    said = update(made)
    assert any(FULL in s for s in said) and any(EXPORTING in s for s in said)


def test_a_baseline_without_a_key_runs_the_whole_path(made):
    path = made.parent / "b" / "net.msgpack.zst"
    baseline = read_baseline(path)
    baseline.meta.content_key = None
    write_baseline(path, baseline)
    report, said = check(made)
    assert reuse_of(report)["why"] == "no-key" and any(FULL in s for s in said)
    assert report["verdict"] == "pass"


def test_a_baseline_that_predates_the_factory_in_the_key_says_so_not_that_files_changed(made):
    from gate.pipeline.content_key import FACTORY, _digest

    path = made.parent / "b" / "net.msgpack.zst"
    baseline = read_baseline(path)
    key = dict(baseline.meta.content_key)
    key["sources"] = {m: d for m, d in key["sources"].items() if m != FACTORY}
    key["parts"] = {**key["parts"], "source": _digest(key["sources"])}
    baseline.meta.content_key = key
    write_baseline(path, baseline)
    report, _ = check(made)
    reuse = reuse_of(report)
    assert reuse["changed"] == ["source"] and "did not record" in reuse["details"][0], reuse
    assert report["verdict"] == "pass"


def test_a_forward_that_draws_random_numbers_is_never_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("REUSE_TEST_NOISE", "1")
    path = project(tmp_path)
    update(path)
    report, _ = check(path)
    reuse = reuse_of(report)
    assert (reuse["reference"], reuse["why"]) == (False, "unkeyable")
    assert "random" in " ".join(reuse["details"])


def _tamper(made: Path, part: str, **versions: str) -> None:
    """The baseline as if recorded elsewhere: another digest for ``part``, other ``versions``, and so
    another key for the reference (the stage the baseline holds)."""
    path = made.parent / "b" / "net.msgpack.zst"
    baseline = read_baseline(path)
    key = dict(baseline.meta.content_key)
    key["parts"] = {**key["parts"], part: "0" * 16}
    key["versions"] = {**key["versions"], **versions}
    key["key"] = "0" * 64
    key["stages"] = {**key["stages"], "reference": "0" * 64}
    baseline.meta.content_key = key
    write_baseline(path, baseline)


FRESH = {"structure": "miss", "export": "miss"}  # exported afresh: the structure and the graph stored


@pytest.mark.parametrize(("change", "parts", "path", "detail", "verdict"), [
    ("code", ["code"], {**FRESH, "reference": "miss"}, "float32 forward changed", "regressed"),
    # a module called that runs no operation: another layer for the reference to record
    ("identity", ["code"], {**FRESH, "reference": "miss"}, "a module call differs", "pass"),
    # weights only: the stored structure with the new weights bound, not exported again
    ("weight", ["weights"], {"structure": "hit", "export": "miss", "reference": "miss"}, "`fc.weight`", "regressed"),
    ("buffer", ["weights"], {"structure": "hit", "export": "miss", "reference": "miss"}, "`scale`", "regressed"),
    ("non-persistent buffer", ["weights"], {"structure": "hit", "export": "miss", "reference": "miss"}, "`shift`",
     "regressed"),
    # the reference computes as before; the outputs ship in float64 now (``dtype``)
    ("precision", ["code", "weights"], {**FRESH, "reference": "miss"}, "", "regressed"),
    ("opset", ["export"], {**FRESH, "reference": "hit"}, "opset default -> 20", "pass"),  # the reference does not read it
    ("transform", ["transform", "versions"], {"export": "hit", "transform": "unkeyed", "reference": "hit"},
     "ref none -> reuse_transforms:identity", "pass"),
])
def test_each_change_reruns_the_stages_that_read_it_and_the_verdict_follows(made, tmp_path, monkeypatch, change,
                                                                           parts, path, detail, verdict):
    """A stage reruns exactly when something it reads changed: its key is another; a stage that does
    not read it keeps its key and its output. (A store of its own: each change meets the store the
    unchanged model left, as a pull request's first run does.)"""
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "own"))
    before, _ = check(made)
    config = made.read_text()
    if change == "code":
        monkeypatch.setenv("REUSE_TEST_TANH", "1")
    elif change == "identity":
        monkeypatch.setenv("REUSE_TEST_IDENTITY", "1")
    elif change == "weight":
        weights(made.parent, monkeypatch, **{"fc.weight": 1 + 1e-3})
    elif change == "buffer":
        weights(made.parent, monkeypatch, scale=1 + 1e-3)
    elif change == "non-persistent buffer":
        weights(made.parent, monkeypatch, shift=1e-3)
    elif change == "precision":
        monkeypatch.setenv("REUSE_TEST_FLOAT64_HEAD", "1")
    elif change == "opset":
        made.write_text(config + "opset = 20\n")
    else:
        made.write_text(config + 'transform = "reuse_transforms:identity"\n')
    report, said = check(made)
    reuse = reuse_of(report)
    assert states(report) == path, reuse["stages"]
    old = {s["stage"]: s["key"] for s in reuse_of(before)["stages"]}
    for stage in ("export", "reference"):  # a stage computed again has another key; one taken keeps it
        assert (reuse_of(report)["stages"][[s["stage"] for s in reuse["stages"]].index(stage)]["key"] != old[stage]) \
            is (path[stage] != "hit"), stage
    assert reuse["changed"] == parts and detail in " ".join(reuse["details"]), reuse
    if path["reference"] != "hit":
        assert (reuse["reference"], reuse["why"]) == (False, "key-changed") and any(FULL in s for s in said)
    else:
        assert reuse["reference"] and not any(FULL in s for s in said)
    assert report["verdict"] == verdict, report["first_regression"]
    assert change != "precision" or report["first_regression"]["check"] == "dtype", report["first_regression"]


@pytest.mark.parametrize(("part", "versions", "detail"), [
    ("versions", {"torch": "0.0.1"}, "torch 0.0.1 ->"),
    ("gate", {}, "parity-gate's own source changed"),
])
def test_a_baseline_recorded_with_other_versions_reruns_the_reference_and_says_which(made, part, versions, detail):
    _tamper(made, part, **versions)
    report, said = check(made)
    reuse = reuse_of(report)
    assert (reuse["reference"], reuse["why"], reuse["changed"]) == (False, "key-changed", [part]), reuse
    assert detail in " ".join(reuse["details"]) and any(FULL in s for s in said)
    assert report["verdict"] == "pass", report["first_regression"]


def test_other_inputs_change_the_key(made):
    made.write_text(made.read_text().replace('shape = [2, 3, 8, 8] }', 'shape = [2, 3, 8, 8], low = 0.0, high = 1.0 }'))
    cfg = load_config(made)
    spec = cfg.models[0]
    baseline = load_one(cfg, spec).baseline
    run = run_model(cfg, spec, cfg.providers, plan=ReusePolicy.for_check().plan(baseline))
    assert (run.reuse.reference, run.reuse.why, run.reuse.changed) == (False, "key-changed", ["inputs"])
    assert "other values" in run.reuse.details[0]


def test_another_factory_of_the_same_file_is_never_served_the_first_ones_graph(made):
    """Two factories of one file whose models trace alike and hold the same weights; only the second's
    exported graph rounds through float16. The factory is part of the key: the second is exported, not
    bound into the first's stored structure, and its own graph fails."""
    made.write_text(made.read_text().replace('"reuse_models:net"', '"reuse_models:net_export_fp16"'))
    report, _ = check(made)
    reuse = reuse_of(report)
    assert reuse["changed"] == ["source"] and "factory" in reuse["details"][0]
    assert states(report)["export"] == "miss" and states(report).get("structure") != "hit"
    assert report["verdict"] != "passed"
    assert report["first_regression"]["provider"] == "CPUExecutionProvider"


@pytest.mark.parametrize("edit", ["model", "transform"])
def test_an_edited_source_file_changes_the_key(tmp_path, edit):
    """In a fresh process each (a module is imported once per process): the edited file is what runs."""
    path = project(tmp_path, 'transform = "reuse_transforms:identity"\n')
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    edited = tmp_path / ("reuse_models.py" if edit == "model" else "reuse_transforms.py")
    edited.write_text(edited.read_text() + "\n# a comment: no number moves, but the file is not the one recorded\n")
    result = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    reuse = reuse_of(report)
    if edit == "model":
        assert reuse["why"] == "key-changed" and states(report)["export"] != "hit"
        assert reuse["changed"] == ["source"] and "`reuse_models`" in reuse["details"][0]
    else:  # the reference and the export do not read the transform; the transform itself runs every time
        assert reuse["why"] is None and states(report) == {"export": "hit", "transform": "unkeyed", "reference": "hit"}
        assert reuse["changed"] == ["transform"] and "source" in reuse["details"][0]
    assert path.exists()


def test_output_tolerance_runs_the_reference_until_the_store_holds_its_outputs(tmp_path, monkeypatch):
    path = project(tmp_path, "output-tolerance = { rtol = 1e-3, atol = 1e-4 }\n")
    update(path)
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "cold"))
    report, said = check(path)
    assert (reuse_of(report)["reference"], reuse_of(report)["why"]) == (False, "outputs") and any(FULL in s for s in said)
    again, said = check(path)
    assert reuse_of(again)["reference"] and reuse_of(again)["outputs"] and not any(FULL in s for s in said)


def test_the_trace_names_custom_operations_it_sees_by_name_only():
    from gate.model.trace import OpTrace

    @torch.library.custom_op("reusetest::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    trace = OpTrace({})
    with trace:
        twice(torch.ones(3))
    assert trace.custom == {"reusetest.twice.default"}


def _git(folder: Path, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_a_baseline_the_change_rewrote_never_vouches_for_itself(made, tmp_path, monkeypatch):
    """A change that moves a weight and writes into the committed baseline the keys a re-record of the
    changed model would, its numbers kept: with --changed-since the base, the reference runs (``rewritten``)
    and the weight fails where it moved. Twins: a baseline the change leaves alone is still taken; an honest
    re-record passes, its reference run all the same."""
    folder = made.parent
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "base")
    base = _git(folder, "rev-parse", "HEAD").strip()
    r = run_cli("check", "--changed-since", base, "--json", "same.json", cwd=folder)
    same = json.loads((folder / "same.json").read_text())
    assert r.returncode == 0 and reuse_of(same)["reference"], r.stdout

    path = folder / "b" / "net.msgpack.zst"
    kept = path.read_bytes()
    weights(tmp_path, monkeypatch, **{"fc.weight": 1 + 1e-4})
    update(made)  # what a re-record of the changed model writes: its keys are taken, its numbers are not
    forged = read_baseline(path).meta
    path.write_bytes(kept)
    baseline = read_baseline(path)
    baseline.meta.content_key, baseline.meta.graph_digest = forged.content_key, forged.graph_digest
    baseline.meta.weights_digest, baseline.meta.tensor_digests = forged.weights_digest, forged.tensor_digests
    write_baseline(path, baseline)
    r = run_cli("check", "--changed-since", base, "--json", "forged.json", cwd=folder)
    report = json.loads((folder / "forged.json").read_text())
    assert r.returncode == 1, r.stdout + r.stderr
    assert reuse_of(report)["why"] == "rewritten" and report["baseline_changes"] == ["b/net.msgpack.zst"]
    fr = report["first_regression"]
    assert (fr["layer"], fr["check"]) == ("fc", "reference-drift")
    assert "this change rewrote the baseline file" in r.stdout

    update(made)  # the honest re-record
    r = run_cli("check", "--changed-since", base, "--json", "honest.json", cwd=folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert reuse_of(json.loads((folder / "honest.json").read_text()))["why"] == "rewritten"
