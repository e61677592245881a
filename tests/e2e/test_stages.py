"""A pass is about what ships (docs/verdict.md#stages), with real exports, real ONNX Runtime sessions
and real files. User code the gate cannot see into (a transform) runs on every check, so a change
made through what no key sees (a data file, an environment variable) is caught by the default check
exactly as by ``--full``; a transform that declares what it reads is reused under those inputs; a key
that gives a second, different output raises an alarm and is never reused; randomness is told by
what the forward draws."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.core.status import Stage
from gate.formats.baseline import read_baseline, write_baseline
from gate.store import MANIFEST, Store, store_dir
from tests.conftest import run_cli
from tests.support.stage_projects import FULL, check, first, project, reuse_of, stage_key, states, update

SCALED = 'transform = "reuse_transforms:scaled"\n'
FC_ON_ORT = ("CPUExecutionProvider", "fc")


@pytest.fixture
def deploy(tmp_path, monkeypatch):
    """The transform's data file (``deploy/scale.json``, a factor for ``fc.weight``), and a setter."""
    path = tmp_path / "deploy" / "scale.json"
    path.parent.mkdir()
    monkeypatch.setenv("REUSE_TEST_DEPLOY", str(path))
    monkeypatch.delenv("REUSE_TEST_SCALE", raising=False)

    def set_factor(factor: float) -> None:
        path.write_text(json.dumps({"fc": factor}))

    set_factor(1.0)
    return set_factor


def own_store(tmp_path, monkeypatch) -> None:
    """A store of the test's own: an alarm it raises, or an entry it plants, stays with it."""
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(tmp_path / "own-store"))


# user code the gate cannot see into runs every time ----------------------------------------------


@pytest.mark.parametrize("through", ["data file", "environment variable"])
def test_a_transform_s_unseen_input_is_caught_by_the_default_check_as_by_full(tmp_path, monkeypatch, deploy, through):
    path = project(tmp_path, SCALED)
    update(path)
    report, _ = check(path)
    assert report["verdict"] == "pass" and states(report) == {"export": "hit", "transform": "unkeyed",
                                                             "reference": "hit"}
    assert not reuse_of(report)["shipped"]["changed"]
    if through == "data file":
        deploy(1.001)
    else:
        monkeypatch.setenv("REUSE_TEST_SCALE", "1.001")
    default, said = check(path)
    full, _ = check(path, full=True)
    assert first(default) == first(full) == FC_ON_ORT, (default["first_regression"], full["first_regression"])
    # The float64 reference and the export did not move and were reused; the graph that ships did.
    assert states(default) == {"export": "hit", "transform": "unkeyed", "reference": "hit"}
    assert not any(FULL in s for s in said)
    shipped = reuse_of(default)["shipped"]
    assert shipped["changed"] and shipped["digest"] != shipped["baseline"]


def test_a_shipped_graph_change_is_said_on_the_console_and_in_the_comment(tmp_path, deploy):
    path = project(tmp_path, SCALED)
    update(path)
    deploy(1.001)
    result = run_cli("check", "--markdown", "r.md", cwd=tmp_path, env={"REUSE_TEST_DEPLOY": str(tmp_path / "deploy" /
                                                                                                  "scale.json")})
    assert result.returncode == 1, result.stderr
    said = "the shipped graph changed since the baseline"
    assert said in result.stdout and said in (tmp_path / "r.md").read_text()
    assert "transform `reuse_transforms:scaled` run (it reads what the gate cannot see: on every check)" \
        in result.stdout


def test_a_rebuilt_artifact_is_what_the_default_check_judges(tmp_path):
    """A prebuilt ONNX file rebuilt with another weight: its bytes are in the export's key."""
    import onnx
    import torch
    from onnx import numpy_helper

    from tests.e2e.reuse_models import net

    torch.manual_seed(0)
    model = net().eval()
    (tmp_path / "build").mkdir()
    artifact = tmp_path / "build" / "model.onnx"
    torch.onnx.export(model, (torch.zeros(2, 3, 8, 8),), str(artifact), input_names=["x"], dynamo=False)
    path = project(tmp_path, 'artifact = "build/model.onnx"\n')
    update(path)
    assert check(path)[0]["verdict"] == "pass"
    proto = onnx.load(str(artifact))
    init = next(t for t in proto.graph.initializer if "fc" in t.name and "weight" in t.name)
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 1.001, init.name))
    onnx.save(proto, str(artifact))  # the repository's build ran again
    default, _ = check(path)
    full, _ = check(path, full=True)
    assert first(default) == first(full) == FC_ON_ORT
    assert states(default)["export"] != "hit" and reuse_of(default)["reference"]


# a transform that declares what it reads ------------------------------------------------------------


def test_declared_transform_inputs_key_its_output_and_a_change_in_them_reruns_it(tmp_path, monkeypatch, deploy):
    path = project(tmp_path, SCALED + 'transform-inputs = ["deploy/*.json", "env:REUSE_TEST_SCALE"]\n')
    update(path)
    report, said = check(path)
    assert report["verdict"] == "pass" and states(report) == {"export": "hit", "transform": "hit", "reference": "hit"}
    assert not any("transform `" in s for s in said)  # the transform did not run
    deploy(1.001)
    moved, _ = check(path)
    assert states(moved)["transform"] == "miss" and first(moved) == FC_ON_ORT
    assert "transform: inputs" in " ".join(reuse_of(moved)["details"])
    deploy(1.0)
    back, _ = check(path)
    assert states(back)["transform"] == "hit" and back["verdict"] == "pass"
    monkeypatch.setenv("REUSE_TEST_SCALE", "1.001")
    env, _ = check(path)
    assert states(env)["transform"] != "hit" and first(env) == FC_ON_ORT


def test_a_transform_input_glob_that_matches_nothing_is_a_config_error_naming_it(tmp_path, deploy):
    project(tmp_path, SCALED + 'transform-inputs = ["deploy/*.yaml"]\n')
    for command in ("check", "validate"):  # validate refuses what check refuses, without running a model
        result = run_cli(command, cwd=tmp_path)
        assert result.returncode == 2, (command, result.stderr)
        assert "transform-inputs`: `deploy/*.yaml` matches no file" in result.stderr


@pytest.mark.parametrize(("extra", "message"), [
    ('transform-inputs = ["deploy/*.json"]\n', "is set, but no `transform` is"),
    (SCALED + 'transform-inputs = ["../secrets/*"]\n', "is not a path relative to the config's folder"),
    (SCALED + 'transform-inputs = ["env:NOT A NAME"]\n', "does not name an environment variable"),
])
def test_a_wrong_transform_input_is_refused_naming_it(tmp_path, extra, message):
    project(tmp_path, extra)
    result = run_cli("validate", cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr


# one output per key ---------------------------------------------------------------------------------


def test_a_second_different_output_under_a_key_raises_an_alarm_and_bars_the_key(tmp_path, monkeypatch, deploy):
    """A transform that reads more than it declares: the full run computes another graph under the key
    the stored one has. Nothing is replaced, the report says which stage and key, and the key is
    never reused here again."""
    own_store(tmp_path, monkeypatch)
    path = project(tmp_path, SCALED + 'transform-inputs = ["deploy/*.json"]\n')
    update(path)
    key = stage_key(check(path)[0], "transform")
    entry = Store(store_dir()).get(Stage.TRANSFORM, key).entry
    stored = (entry.folder / MANIFEST).read_bytes()
    env = {"REUSE_TEST_DEPLOY": str(tmp_path / "deploy" / "scale.json"), "REUSE_TEST_SCALE": "1.001"}
    result = run_cli("check", "--full", "--json", "r.json", "--markdown", "r.md", cwd=tmp_path, env=env)
    assert result.returncode == 1, result.stderr
    alarms = reuse_of(json.loads((tmp_path / "r.json").read_text()))["alarms"]
    assert [(a["stage"], a["key"]) for a in alarms] == [("transform", key)]
    line = f"soundness alarm: the transform stage's key {key[:12]} gave a second, different output"
    assert line in result.stdout and line in (tmp_path / "r.md").read_text()
    assert (entry.folder / MANIFEST).read_bytes() == stored  # nothing replaced
    again, said = check(path)  # the declared inputs as they were: the key is barred all the same
    assert states(again)["transform"] == "alarm" and any("transform `" in s for s in said)
    assert again["verdict"] == "pass"


def _plant(tmp_path: Path, monkeypatch, scale: float) -> tuple[Path, str, Path]:
    """A project whose stored export's `fc.weight` is scaled by ``scale`` after a check stored it: the
    config, the export's key and the entry's folder."""
    import onnx
    from onnx import numpy_helper

    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    report, _ = check(path)
    key = stage_key(report, "export")
    folder = store_dir() / "export" / key
    proto = onnx.load(str(folder / "model.onnx"))
    init = next(t for t in proto.graph.initializer if t.name == "fc.weight")
    init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * scale, init.name))
    onnx.save(proto, str(folder / "model.onnx"))
    return path, key, folder


def _plant_weights(tmp_path: Path, monkeypatch) -> tuple[Path, str, Path]:
    """A stored export whose first external tensor's bytes are changed in its weights file (its size, all
    the store records of it, unchanged)."""
    import onnx

    from gate.export import saved

    own_store(tmp_path, monkeypatch)
    monkeypatch.setattr(saved, "INLINE_TENSOR_BYTES", 256)  # the conv's weight (864 bytes): the data file
    path = project(tmp_path)
    update(path)
    key = stage_key(check(path)[0], "export")
    folder = store_dir() / "export" / key
    [first, *_] = saved.external(onnx.load(str(folder / saved.MODEL), load_external_data=False))
    data, offset, length = saved.region(first, folder)
    raw = bytearray(data.read_bytes())
    raw[offset:offset + length] = bytes(length)  # the tensor zeroed
    data.write_bytes(bytes(raw))
    # The store hashes it no more than the graph's digest does (Graph.proves): it records its size.
    assert json.loads((folder / MANIFEST).read_text())["files"][saved.DATA] == {"size": len(raw)}
    return path, key, folder


def _rewrite(folder: Path, **changes) -> None:
    """The entry's manifest made to match its planted file (and ``changes``)."""
    from gate.store.entry import sha256

    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["model.onnx"] = {"size": (folder / "model.onnx").stat().st_size,
                                       "sha256": sha256(folder / "model.onnx")}
    manifest["payload"].update(changes.pop("payload", {}))
    manifest.update(changes)
    (folder / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("consistent", [True, False])
def test_a_planted_export_is_caught_by_the_next_full_run_as_an_alarm(tmp_path, monkeypatch, consistent):
    """An export entry that holds another graph than its key gives, consistent in itself (its manifest and
    payload made to match): the full run's export differs, the alarm names the export's key, and later
    checks export afresh. One whose payload still records the graph it held is damaged: replaced, no alarm."""
    from gate.export.graph import file_digest
    from gate.export.record import Graph
    from gate.store.entry import read_entry

    path, key, folder = _plant(tmp_path, monkeypatch, 1.01)
    _rewrite(folder)
    if not consistent:
        full, _ = check(path, full=True)
        assert full["verdict"] == "pass" and not reuse_of(full).get("alarms")
        assert states(check(path)[0])["export"] == "hit"  # the full run's export replaced it
        return
    _rewrite(folder, payload={"graph_digest": file_digest(folder / "model.onnx")})
    _rewrite(folder, digest=Graph.from_entry(read_entry(folder, "export", key)).output_digest())
    full, _ = check(path, full=True)
    assert full["verdict"] == "pass"  # the full run judged its own export
    assert [(a["stage"], a["key"]) for a in reuse_of(full)["alarms"]] == [("export", key)]
    after, _ = check(path)
    assert states(after)["export"] == "alarm" and after["verdict"] == "pass"


@pytest.mark.parametrize("forged", ["the file and its size and sha256", "its entry's digests too",
                                    "the weights file"])
def test_a_planted_export_is_caught_on_the_hit_before_any_provider_runs_it(tmp_path, monkeypatch, forged):
    """The default check proves the entry it serves: the graph's digest recomputed from the files against
    the entry's payload and manifest (a mismatch: the entry is corrupt, replaced), and against the
    baseline's record under the same key (a mismatch in an entry consistent in itself: the export key's
    alarm). Either way the export reruns: the planted graph never runs."""
    from gate.export.graph import file_digest
    from gate.export.record import Graph
    from gate.store.entry import read_entry

    if forged == "the weights file":  # bytes the graph's digest proves, not the manifest
        path, key, folder = _plant_weights(tmp_path, monkeypatch)
    else:
        path, key, folder = _plant(tmp_path, monkeypatch, 1.5)
        _rewrite(folder)
    if forged == "its entry's digests too":  # consistent in itself: only the baseline's record tells
        _rewrite(folder, payload={"graph_digest": file_digest(folder / "model.onnx")})
        _rewrite(folder, digest=Graph.from_entry(read_entry(folder, "export", key)).output_digest())
    after, _ = check(path)
    alarmed = forged == "its entry's digests too"
    said = [(a["stage"], a["key"]) for a in reuse_of(after).get("alarms") or []]
    assert said == ([("export", key)] if alarmed else [])
    assert states(after)["export"] == ("alarm" if alarmed else "corrupt")
    assert after["verdict"] == "pass"  # exported afresh, judged so


def test_a_reference_that_moves_under_its_recorded_key_raises_an_alarm(tmp_path, monkeypatch):
    """The baseline's float64 reference computed by what the key did not see (here: its fingerprint
    of `fc` edited, and of the model's output, fc's very tensor): ``--full`` fails at `fc` as it must,
    and says the reference's key cannot vouch."""
    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    file = tmp_path / "b" / "net.msgpack.zst"
    baseline = read_baseline(file)
    for layer in (x for x in baseline.layers if x.name in ("fc", "(model)")):
        layer.fp.sketch[:] = layer.fp.sketch * 1.001
    write_baseline(file, baseline)
    full, _ = check(path, full=True)
    assert (full["first_regression"]["layer"], full["first_regression"]["check"]) == ("fc", "reference-drift")
    alarms = reuse_of(full)["alarms"]
    assert [(a["stage"], a["key"]) for a in alarms] == [("reference", stage_key(full, "reference"))]
    assert "`fc`" in alarms[0]["note"]
    after, _ = check(path)
    assert (reuse_of(after)["reference"], reuse_of(after)["why"]) == (False, "alarm")


def test_float64_outputs_that_differ_under_their_key_raise_an_alarm(tmp_path, monkeypatch):
    import numpy as np

    from gate.store.entry import sha256

    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    key = stage_key(check(path)[0], "reference")
    folder = store_dir() / "reference" / key
    with np.load(folder / "outputs.npz") as npz:
        outputs = {k: npz[k] * 1.01 for k in npz.files}
    np.savez(folder / "outputs.npz", **outputs)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["outputs.npz"] = {"size": (folder / "outputs.npz").stat().st_size,
                                        "sha256": sha256(folder / "outputs.npz")}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    full, _ = check(path, full=True)
    alarms = reuse_of(full)["alarms"]
    assert [(a["stage"], a["key"]) for a in alarms] == [("reference", key)]
    assert "relative L2" in alarms[0]["note"]


# randomness by what the forward draws --------------------------------------------------------------


@pytest.mark.parametrize(("noise", "reused", "said"), [
    ("", True, None),
    ("attention", True, None),  # scaled_dot_product_attention is tagged random; with dropout 0 it draws nothing
    ("1", False, "drew from the default CPU generator"),
    ("own", False, "(its own generator)"),
    ("held", False, "drew from generator `noise`"),
    ("numpy", False, "a draw from NumPy's global generator"),  # no operation shows these draws: states do
    ("python", False, "a draw from Python's `random`"),
])
def test_randomness_is_told_by_what_the_forward_draws(tmp_path, monkeypatch, noise, reused, said):
    monkeypatch.delenv("REUSE_TEST_NOISE", raising=False)
    monkeypatch.delenv("REUSE_TEST_ATTENTION", raising=False)
    if noise == "attention":
        monkeypatch.setenv("REUSE_TEST_ATTENTION", "1")
    elif noise:
        monkeypatch.setenv("REUSE_TEST_NOISE", noise)
    path = project(tmp_path)
    update(path)
    reuse = reuse_of(check(path)[0])
    assert reuse["reference"] is reused, reuse
    if said:
        assert reuse["why"] == "unkeyable" and said in " ".join(reuse["details"]), reuse["details"]


def test_a_transformers_model_with_its_default_attention_reuses(tmp_path):
    model = ('[[models]]\nname = "bert"\nfactory = "reuse_models:bert_sdpa"\n'
             'inputs = [{ name = "input_ids", shape = [1, 8], dtype = "int64", low = 0, high = 64 }]\n')
    path = project(tmp_path, model=model)
    update(path)
    report, said = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    assert reuse_of(report)["reference"] and states(report) == {"export": "hit", "reference": "hit"}
    assert not any(FULL in s for s in said)


# one export for the cases that share it ------------------------------------------------------------


def test_cases_that_share_an_export_share_its_stage(tmp_path):
    model = ('[[models]]\nname = "net"\nfactory = "reuse_models:net"\ninputs = [{ name = "x", shape = [2, 3, 8, 8] }]\n'
             'dynamic-shapes = { x = { 0 = "batch" } }\nbatch-sizes = [2, 3]\n')
    path = project(tmp_path, model=model)
    update(path)
    report, said = check(path)
    assert report["verdict"] == "pass" and [m["name"] for m in report["models"]] == ["net.b2", "net.b3"]
    one, two = (reuse_of(report, i)["stages"][0] for i in (0, 1))
    assert (one["state"], two["state"], one["key"]) == ("hit", "hit", two["key"])
    assert "the graph of case `net.b2`" in two["note"]
    assert all(reuse_of(report, i)["reference"] for i in (0, 1))


def test_the_store_folder_can_be_moved_between_machines_as_a_whole(tmp_path, monkeypatch):
    """What a CI cache does: the folder restored elsewhere serves the same keys."""
    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    moved = tmp_path / "restored"
    shutil.copytree(store_dir(), moved)
    monkeypatch.setenv("PARITY_GATE_CACHE_DIR", str(moved))
    report, _ = check(path)
    assert states(report) == {"export": "hit", "reference": "hit"}


def test_a_transform_reads_an_export_with_external_weights_that_is_being_stored(tmp_path, monkeypatch):
    """Storing an output hard-links its files, and onnx refuses external data with more than one link:
    the export is stored only once the transform has read it (a cold store)."""
    from gate.export import saved

    own_store(tmp_path, monkeypatch)
    monkeypatch.setattr(saved, "INLINE_TENSOR_BYTES", 256)  # the conv's weight (864 bytes) goes to the data file
    path = project(tmp_path, 'transform = "reuse_transforms:identity"\n')
    update(path)
    report, _ = check(path)
    assert report["verdict"] == "pass", report["first_regression"]
    assert states(report) == {"export": "hit", "transform": "unkeyed", "reference": "hit"}
    assert (store_dir() / "export" / stage_key(report, "export") / saved.DATA).is_file()


# a weight-only change binds the new weights into the stored structure -------------------------------


def test_a_weight_only_change_binds_its_weights_into_the_stored_structure_as_a_fresh_export_would(tmp_path,
                                                                                                 monkeypatch):
    from tests.support.stage_projects import weights

    own_store(tmp_path, monkeypatch)
    monkeypatch.delenv("REUSE_TEST_WEIGHTS", raising=False)
    path = project(tmp_path)
    update(path)
    weights(tmp_path, monkeypatch, **{"fc.weight": 1 + 1e-3})
    changed, said = check(path)
    assert states(changed) == {"structure": "hit", "export": "miss", "reference": "miss"}, states(changed)
    assert any("these weights bound into it" in s for s in said)
    assert not any("exporting to ONNX" in s for s in said)
    assert (changed["first_regression"]["layer"], changed["first_regression"]["check"]) == ("fc", "reference-drift")
    full, said = check(path, full=True)  # a fresh export under the same key: the same graph, no alarm
    assert any("exporting to ONNX" in s for s in said) and not reuse_of(full).get("alarms")
    assert reuse_of(full)["shipped"]["digest"] == reuse_of(changed)["shipped"]["digest"]
    again, _ = check(path)
    assert states(again)["export"] == "hit"


CLASH_MODEL = """
from pathlib import Path

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("BUF", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x - self.BUF)).mean((2, 3)))


def net():
    torch.manual_seed(0)
    model = Net().eval()
    with torch.no_grad():
        model.conv.weight.mul_(float((Path(__file__).parent / "scale.txt").read_text()))
    return model
"""


@pytest.mark.parametrize("buffer", ["mean", "pix_mean"])
def test_a_buffer_named_as_an_operation_s_output_binds_new_weights_as_a_fresh_export_would(
        tmp_path, monkeypatch, buffer):
    """Buffer ``mean`` beside ``.mean()``: the exporter names both values ``mean``; the stored structure
    keeps them apart, so an unchanged model hits the store and a weight-only change binds into it."""
    own_store(tmp_path, monkeypatch)
    (tmp_path / f"clash_{buffer}.py").write_text(CLASH_MODEL.replace("BUF", buffer))  # a module per case
    (tmp_path / "scale.txt").write_text("1.0")
    path = project(tmp_path, model=f'[[models]]\nname = "net"\nfactory = "clash_{buffer}:net"\n'
                                   'inputs = [{ name = "x", shape = [2, 3, 8, 8] }]\n')
    update(path)
    same, _ = check(path)
    assert same["verdict"] == "pass" and states(same)["export"] == "hit", states(same)
    (tmp_path / "scale.txt").write_text("1.001")
    changed, _ = check(path)
    assert states(changed) == {"structure": "hit", "export": "miss", "reference": "miss"}, states(changed)
    full, _ = check(path, full=True)
    assert first(changed) == ("torch-cpu", "conv"), changed["first_regression"]  # the weights changed there
    assert changed["first_regression"] == full["first_regression"]
    assert reuse_of(full)["shipped"]["digest"] == reuse_of(changed)["shipped"]["digest"]


def test_a_structure_stored_from_a_nan_weight_binds_other_weights_without_it(tmp_path, monkeypatch):
    """The class of a structure carrying weight bytes its key does not digest: a check of weights
    holding a NaN stores the structure; a later weight-only change binds into it and must judge its
    own weights (the same verdict and graph as ``--full``), never the NaN."""
    from tests.support.stage_projects import weights

    monkeypatch.delenv("REUSE_TEST_WEIGHTS", raising=False)
    path = project(tmp_path)
    update(path)
    own_store(tmp_path, monkeypatch)  # the NaN run is the first to store this code's structure
    weights(tmp_path, monkeypatch, **{"fc.weight": float("nan")})
    nan, _ = check(path)
    assert nan["first_regression"]["check"] == "nonfinite"
    again, _ = check(path)  # the same NaN outputs under their key are the same output, no alarm
    assert again["first_regression"] == nan["first_regression"] and not reuse_of(again).get("alarms")
    weights(tmp_path, monkeypatch, **{"fc.weight": 1 + 1e-3})
    changed, _ = check(path)
    assert states(changed)["structure"] == "hit", states(changed)
    full, _ = check(path, full=True)
    assert (changed["first_regression"]["layer"], changed["first_regression"]["check"]) == ("fc", "reference-drift")
    assert changed["first_regression"] == full["first_regression"]
    assert reuse_of(full)["shipped"]["digest"] == reuse_of(changed)["shipped"]["digest"]
    assert not reuse_of(full).get("alarms")


def test_the_export_the_baseline_records_is_read_while_the_model_builds(tmp_path, monkeypatch):
    """The lookup a check most likely needs (the entry under the recorded export key, its graph
    digested) runs beside the build, which leaves a CPU idle, and not beside the probe's threads: the
    factory sees the entry marked used before it returns."""
    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    report, _ = check(path)
    manifest = store_dir() / "export" / stage_key(report, "export") / MANIFEST
    os.utime(manifest, (1, 1))
    monkeypatch.setenv("REUSE_TEST_WAIT_FOR", str(manifest))
    monkeypatch.setenv("REUSE_TEST_SEEN", str(tmp_path / "seen"))
    report, _ = check(path)
    assert (tmp_path / "seen").read_text() == "used"
    assert states(report)["export"] == "hit" and report["verdict"] == "pass"


def test_a_code_change_exports_afresh(tmp_path, monkeypatch):
    own_store(tmp_path, monkeypatch)
    path = project(tmp_path)
    update(path)
    monkeypatch.setenv("REUSE_TEST_TANH", "1")
    report, said = check(path)
    assert states(report)["structure"] == "miss" and states(report)["export"] == "miss"
    assert any("exporting to ONNX" in s for s in said)
