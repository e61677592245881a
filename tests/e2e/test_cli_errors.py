"""Bad input gets one clear line and the documented exit code, never a traceback."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import msgpack
import pytest
import zstandard

from gate.errors import GateError
from gate.formats.baseline import decode_baseline, encode_baseline, read_document
from gate.formats.baseline.schema import FORMAT
from tests.conftest import ROOT, run_cli
from tests.e2e.test_gate import write_config


def assert_one_line_error(proc, code: int, *fragments: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


def test_no_config(tmp_path):
    assert_one_line_error(run_cli("check", cwd=tmp_path), 2, "no configuration found", str(tmp_path))


def test_unknown_config_key(tmp_path):
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn")
    config.write_text(config.read_text().replace("[[models]]", "[[models]]\nexproter = \"dynamo\""))
    assert_one_line_error(run_cli("check", cwd=tmp_path), 2, "parity-gate.toml", "models[1].exproter", "unknown key")


def test_wrong_type_names_the_key(tmp_path):
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn")
    config.write_text(config.read_text().replace('shape = [2, 3, 16, 16]', 'shape = "2x3"'))
    assert_one_line_error(run_cli("check", cwd=tmp_path), 2, "models[1].inputs[1].shape", "expected an array")


def test_factory_that_does_not_import(tmp_path):
    write_config(tmp_path, "tiny-cnn", "nowhere.models:net")
    assert_one_line_error(run_cli("check", cwd=tmp_path), 2, "models[1].factory", "cannot import `nowhere.models`")


@pytest.mark.parametrize("source, said", [("def net(:\n", "SyntaxError"),
                                          ("import lacking_it\n", "No module named 'lacking_it'")])
def test_a_factory_module_that_raises_while_imported_fails_its_model_alone(tmp_path, source, said):
    """The module is there and the model's code breaks on import (a pull request's syntax error, a package
    it lacks): that model fails to build, named with the file's line; the model beside it is judged and
    the reports are written."""
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn")
    (tmp_path / "broken.py").write_text(source)
    config.write_text(config.read_text() + config.read_text().split("\n\n", 1)[1]
                      .replace('"tiny-cnn"', '"broken"').replace("examples.zoo:tiny_cnn", "broken:net"))
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert_model_error(proc, "BUILD_FAIL", "model `broken`: importing `broken` raised", said)
    models = {m["name"]: m for m in json.loads((tmp_path / "r.json").read_text())["models"]}
    assert models["broken"]["error"]["status"] == "BUILD_FAIL" and models["tiny-cnn"]["error"] is None
    assert models["broken"]["error"]["where"].startswith("broken.py:1")


def assert_model_error(proc, status: str, *fragments: str) -> None:
    """A model that fails is a report status (other models still report), exit 3, last line says why."""
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("ERROR") and status in last, last
    for fragment in fragments:
        assert fragment in proc.stdout.replace("\n", ""), fragment


def test_factory_that_raises(tmp_path):
    write_config(tmp_path, "tiny-cnn", "faults:raises")
    assert_model_error(run_cli("check", cwd=tmp_path), "BUILD_FAIL", "model `tiny-cnn`", "faults:raises",
                       "checkpoint weights.pt not found")
    # update-baseline writes nothing and says why in one line.
    assert_one_line_error(run_cli("update-baseline", cwd=tmp_path), 3, "checkpoint weights.pt not found")


@pytest.mark.parametrize("factory, said", [
    ("faults:raises", "checkpoint weights.pt not found"),
    ("faults:meta_device", "model `broken`: tensor `stem.0.weight` has no data (meta device): load or "
     "initialise its weights in the factory"),
])
def test_update_baseline_records_the_models_that_run_beside_one_that_cannot_be_built(tmp_path, factory, said):
    """One bad factory (it raises, its weights hold no data) fails one model: the others' baselines are
    written, its own is left as it was; a check of it fails its build in one line."""
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b")
    text = config.read_text()
    tables = text[text.index("[[models]]"):]
    config.write_text(text + tables.replace('"tiny-cnn"', '"broken"').replace('"examples.zoo:tiny_cnn"',
                                                                                f'"{factory}"'))
    assert_one_line_error(run_cli("update-baseline", cwd=tmp_path), 3, "1 model could not run, its baseline "
                          "left as before (first: broken: BUILD_FAIL", said)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["tiny-cnn.msgpack.zst"]
    assert_model_error(run_cli("check", "--model", "broken", cwd=tmp_path), "BUILD_FAIL", said)


def test_a_forward_that_returns_no_tensor(tmp_path):
    """Nothing ships: the model fails in one line, and update-baseline writes nothing for it."""
    write_config(tmp_path, "tiny-cnn", "faults:returns_none", baseline_dir=tmp_path / "b")
    assert_one_line_error(run_cli("update-baseline", cwd=tmp_path), 3,
                          "model `tiny-cnn`: its forward returned no tensor")
    assert not (tmp_path / "b" / "tiny-cnn.msgpack.zst").exists()


@pytest.mark.parametrize("key, value, said", [
    ("factory", "faults:not_a_module",
     "`models[2].factory`: `faults:not_a_module` returned dict, not a torch.nn.Module"),
    ("inputs", "made:nothing",
     "`models[2].inputs`: `made:nothing` returned NoneType, not a tuple of tensors"),
])
def test_a_factory_or_inputs_returning_something_else_fails_its_model_alone(tmp_path, key, value, said):
    """The model's own code returned the wrong thing: that model fails to build, named with its key; the
    model beside it is judged and the reports are written (it stopped the whole check, exit 2)."""
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn")
    (tmp_path / "made.py").write_text("def nothing(seed):\n    return None\n")
    second = config.read_text().split("\n\n", 1)[1].replace('"tiny-cnn"', '"odd"')
    if key == "factory":
        second = second.replace("examples.zoo:tiny_cnn", value)
    else:
        second = re.sub(r"inputs = .*", f'inputs = "{value}"', second)
    config.write_text(config.read_text() + second)
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert_model_error(proc, "BUILD_FAIL", f"model `odd`: {said}")
    models = {m["name"]: m for m in json.loads((tmp_path / "r.json").read_text())["models"]}
    assert models["odd"]["error"]["status"] == "BUILD_FAIL" and models["tiny-cnn"]["error"] is None


def test_model_that_fails_to_export(tmp_path):
    config = write_config(tmp_path, "tiny-cnn", "faults:unexportable", baseline_dir=tmp_path)
    config.write_text(config.read_text().replace("[2, 3, 16, 16]", "[2, 4, 4]"))
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert_model_error(proc, "EXPORT_FAIL", "linalg_eigh")
    import json

    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "error" and report["models"][0]["error"]["status"] == "EXPORT_FAIL"


def _copy_baseline(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "tiny-cnn.msgpack.zst").write_bytes(data)
    write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b")


def assert_baseline_refused(proc, *fragments: str) -> str:
    """A baseline that cannot be read fails its model (BAD_BASELINE, exit 2) in one line that names the
    file, and its next step says what fixes it, once; the model is not run. Returns that line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("ERROR | ") and ": BAD_BASELINE: baseline `" in last, last
    for fragment in fragments:
        assert fragment in proc.stdout, (fragment, proc.stdout)
    return last


RESTORE = "restore it with `git checkout -- b/tiny-cnn.msgpack.zst` and check again"


def test_corrupt_baseline(tmp_path):
    """Restored, never re-recorded: a re-record would take the model as it is now, a fault included."""
    _copy_baseline(tmp_path, b"\x28\xb5\x2f\xfd" + b"garbage" * 10)
    proc = run_cli("check", cwd=tmp_path)
    assert_baseline_refused(proc, "tiny-cnn.msgpack.zst", RESTORE)
    assert "update-baseline" not in proc.stdout


def test_a_baseline_left_as_an_lfs_pointer_is_fetched_and_one_of_an_older_format_re_recorded(tmp_path):
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 9\n"
    _copy_baseline(tmp_path, pointer)
    proc = run_cli("check", cwd=tmp_path)
    assert_baseline_refused(proc, "restore it with `git lfs pull --include b/tiny-cnn.msgpack.zst`")
    assert "update-baseline" not in proc.stdout
    (tmp_path / "b" / "tiny-cnn.msgpack.zst").write_bytes(  # twin: a format no longer read is re-recorded
        zstandard.ZstdCompressor(write_content_size=True).compress(
            msgpack.packb({"format": FORMAT, "version": 0}, use_bin_type=True)))
    assert_baseline_refused(run_cli("check", cwd=tmp_path), "no longer supported",
                            "re-record it with `parity-gate update-baseline --model tiny-cnn`")


def test_truncated_baseline(tmp_path):
    data = (ROOT / "baselines" / "tiny-cnn.msgpack.zst").read_bytes()
    _copy_baseline(tmp_path, data[: len(data) // 2])
    assert_baseline_refused(run_cli("check", cwd=tmp_path), "tiny-cnn.msgpack.zst", RESTORE)


def test_baseline_from_a_newer_format_version(tmp_path):
    """The next step is the upgrade the error names, never a re-record; update-baseline refuses to replace
    the file (it would drop what the newer parity-gate recorded) and leaves it as it was. Its twin, a
    damaged file, is restored or re-recorded (above)."""
    doc = read_document(ROOT / "baselines" / "tiny-cnn.msgpack.zst")
    import msgpack

    from gate.formats.baseline import VERSION

    doc["version"], doc["added_later"] = VERSION + 1, True  # a key this version does not know: still "upgrade"
    raw = msgpack.packb(doc, use_bin_type=True)
    _copy_baseline(tmp_path, zstandard.ZstdCompressor(write_content_size=True).compress(raw))
    assert_baseline_refused(run_cli("check", cwd=tmp_path), "tiny-cnn.msgpack.zst", f"version {VERSION + 1}",
                            "next: its baseline file was written by a newer parity-gate: run `pip install -U "
                            "parity-gate` where this check runs")
    before = (tmp_path / "b" / "tiny-cnn.msgpack.zst").read_bytes()
    assert_one_line_error(run_cli("update-baseline", cwd=tmp_path), 2, "tiny-cnn.msgpack.zst",
                          f"newer parity-gate (format version {VERSION + 1})")
    assert (tmp_path / "b" / "tiny-cnn.msgpack.zst").read_bytes() == before


def test_one_bad_baseline_fails_one_model(tmp_path):
    """Three models, one baseline truncated (a crafted file of tests/data/bad): that model fails with its
    reason and next step; the other two are judged; the JSON, JUnit and Markdown reports are written."""
    shutil.copytree(ROOT / "baselines", tmp_path / "b")
    bad = ROOT / "tests" / "data" / "bad" / "truncated-frame.msgpack.zst"
    shutil.copy(bad, tmp_path / "b" / "bad.msgpack.zst")
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b")
    text = config.read_text()
    tables = text[text.index("[[models]]"):]
    config.write_text(text + tables.replace('"tiny-cnn"', '"bad"') + '\n[[models]]\n'
                      'name = "tiny-transformer"\nfactory = "examples.zoo:tiny_transformer"\n'
                      'inputs = [{ name = "x", shape = [2, 8, 16], dtype = "float32" }]\n')
    proc = run_cli("check", "--json", "r.json", "--junit", "r.xml", "--markdown", "r.md", cwd=tmp_path)
    assert_baseline_refused(proc, "bad.msgpack.zst", "truncated zstd frame",
                            "restore it with `git checkout -- b/bad.msgpack.zst`")
    report = json.loads((tmp_path / "r.json").read_text())
    status = {m["name"]: (m["status"], (m.get("error") or {}).get("status")) for m in report["models"]}
    assert status == {"tiny-cnn": ("pass", None), "tiny-transformer": ("pass", None),
                      "bad": ("error", "BAD_BASELINE")}
    assert report["verdict"] == "error"
    junit = ET.parse(tmp_path / "r.xml").getroot()
    errors = [(c.get("classname"), e.get("type")) for c in junit.iter("testcase") for e in c.findall("error")]
    assert errors == [("bad", "BAD_BASELINE")]
    assert len([c for c in junit.iter("testcase") if c.get("classname") != "bad"]) == 6  # judged, and passed
    comment = (tmp_path / "r.md").read_text()
    assert "failed: `bad`" in comment and "truncated zstd frame" in comment
    assert comment.count("`git checkout -- b/bad.msgpack.zst`") == 1  # the next step says it, once
    assert "1 with a baseline that cannot judge it" in comment and "failed to run" not in comment


def test_show_prints_a_baseline(tmp_path):
    proc = run_cli("show", str(ROOT / "baselines" / "tiny-cnn.msgpack.zst"), cwd=tmp_path)
    assert proc.returncode == 0
    assert "layer block1.bn1 " in proc.stdout and "model tiny-cnn" in proc.stdout


def test_baseline_bytes_are_deterministic():
    """Re-encoding the committed baseline gives its msgpack payload byte for byte, in the same
    frame. The compressed bytes are compared only with what this libzstd writes: the committed
    file was compressed by whichever libzstd version wrote it."""
    path = ROOT / "baselines" / "tiny-cnn.msgpack.zst"
    committed = path.read_bytes()
    data = encode_baseline(read_document(path))
    unframe = zstandard.ZstdDecompressor().decompress
    assert unframe(data) == unframe(committed)
    for frame in (data, committed):
        params = zstandard.get_frame_parameters(frame)
        assert (params.content_size, params.has_checksum, params.dict_id) == (len(unframe(committed)), True, 0)
    assert encode_baseline(read_document(path)) == data
    assert encode_baseline(decode_baseline(data, "again")) == data


def test_version_and_help(tmp_path):
    proc = run_cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("parity-gate ")
    assert run_cli("-h", cwd=tmp_path).returncode == 0
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_report_lists_baseline_files_the_change_touches(tmp_path):
    """A real git repository: a commit that rewrites a baseline is named in the report."""
    import subprocess

    from gate import commands
    from gate.config import load_config

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=Path("baselines"))
    (tmp_path / "baselines").mkdir()
    data = (ROOT / "baselines" / "tiny-cnn.msgpack.zst").read_bytes()
    (tmp_path / "baselines" / "tiny-cnn.msgpack.zst").write_bytes(data)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "base", "--allow-empty")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    cfg = load_config(tmp_path / "parity-gate.toml")
    assert commands.baseline_changes(cfg, "HEAD") == []
    (tmp_path / "baselines" / "tiny-cnn.msgpack.zst").write_bytes(data[:-1] + b"\0")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "refresh")
    assert commands.baseline_changes(cfg, "HEAD~1") == ["baselines/tiny-cnn.msgpack.zst"]
    for since in ("no-such-rev", "-v", "--output=out.txt", "HEAD~1...HEAD"):  # an option, a range: refused
        with pytest.raises(GateError, match=rf"^--changed-since {re.escape(since)}: not one commit here "
                           r"\(a branch, tag or commit, never a range or an option\); fetch it \(actions/checkout with "
                           r"fetch-depth: 0\)"):
            commands.baseline_changes(cfg, since)  # fails closed: an empty list would pass a change unseen
    assert not (tmp_path / "out.txt").exists()
    # a folder git would quote (non-ASCII) is listed as it is named
    (tmp_path / "modèles").mkdir()
    (tmp_path / "modèles" / "tiny-cnn.msgpack.zst").write_bytes(data)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "moved")
    assert commands.baseline_changes(cfg, "HEAD~1") == ["modèles/tiny-cnn.msgpack.zst"]


def test_baselines_are_byte_identical_across_fingerprint_backends(tmp_path):
    """Same model, same machine: update-baseline under the C kernel and under the NumPy spec
    writes the same bytes, but for the seconds each run took (a measurement, `meta.seconds`)."""
    outputs = {}
    for backend in ("native", "numpy"):
        folder = tmp_path / backend
        folder.mkdir()
        write_config(folder, "tiny-transformer", "examples.zoo:tiny_transformer", baseline_dir=Path("b"),
                     providers='["torch-cpu"]')
        shutil.copytree(ROOT / "examples", folder / "examples")
        proc = run_cli("update-baseline", cwd=folder, env={"PARITY_GATE_BACKEND": backend})
        assert proc.returncode == 0, proc.stderr
        doc = read_document(folder / "b" / "tiny-transformer.msgpack.zst")
        assert doc["meta"].pop("seconds") > 0
        outputs[backend] = encode_baseline(doc)
    assert outputs["native"] == outputs["numpy"]


BREAKS_IN_ORT = '''
import onnx
from onnx import helper, numpy_helper
import numpy as np


def reshape_by_seven(proto):
    """Reshape the first output to (-1, 7): a valid graph ONNX Runtime refuses (20 values)."""
    out = proto.graph.output[0]
    proto.graph.initializer.append(numpy_helper.from_array(np.array([-1, 7], dtype=np.int64), "by_seven"))
    proto.graph.node.append(helper.make_node("Reshape", [out.name, "by_seven"], ["reshaped"]))
    out.name = "reshaped"
    out.type.tensor_type.ClearField("shape")
    return proto
'''


def test_a_provider_that_fails_names_the_model_once(tmp_path):
    (tmp_path / "breaks.py").write_text(BREAKS_IN_ORT)
    write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b",
                 extra='transform = "breaks:reshape_by_seven"\n')
    proc = run_cli("update-baseline", cwd=tmp_path)
    # The graph is loaded before it is trusted: an export failure, its PyTorch side still recorded.
    assert_one_line_error(proc, 3, "does not load", "recorded the reference and the PyTorch providers only")
    error = next(line for line in proc.stderr.splitlines() if line.startswith("error:"))
    assert error.count("model `tiny-cnn`") == 1, error
    recorded = read_document(tmp_path / "b" / "tiny-cnn.msgpack.zst")
    assert sorted(recorded["providers"]) == ["torch-cpu"]


def test_a_misspelt_tolerance_key_is_refused_with_exit_2_naming_it(tmp_path):
    (tmp_path / "parity-gate.toml").write_text(
        'tolerance = { grwoth = 3.0 }\n[[models]]\nname = "m"\nfactory = "m:f"\ninputs = [{ name = "x", shape = [2] }]\n')
    assert_one_line_error(run_cli("validate", cwd=tmp_path), 2, "parity-gate.toml", "`tolerance.grwoth`",
                          "unknown key (allowed: growth, floor, reference, ceiling)")


def test_an_unexpected_exception_exits_with_its_own_code_and_its_traceback(tmp_path, monkeypatch, capsys):
    """A bug in parity-gate is never read as a regression (1): it exits 4, its traceback kept."""
    from gate.cli import app
    from gate.errors import INTERNAL_ERROR

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(app, "_load", broken)
    monkeypatch.setattr("sys.argv", ["parity-gate", "list"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        app.main()
    assert exited.value.code == INTERNAL_ERROR == 4
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug" in err and "internal error" in err


NAMED_MODELS = '''import os
import torch
from torch import nn


class Named(nn.Module):
    """A linear layer, a module under ``key`` (a ReLU or a Linear) and the head; with RENAME set, ``key``
    becomes RENAME (a pure rename: every number stays) and ``clash`` calls ``l2`` twice."""

    def __init__(self, key, relu=False, clash=False):
        super().__init__()
        torch.manual_seed(0)
        self.l2 = nn.Linear(8, 8)
        self.key, self.clash = os.environ.get("RENAME", key), clash and "RENAME" in os.environ
        self.add_module(self.key, nn.ReLU() if relu else nn.Linear(8, 8))
        self.add_module("grad:head", nn.Linear(8, 4))

    def forward(self, x):
        x = self.l2(x)
        if self.clash:
            x = self.l2(x)
        return getattr(self, "grad:head")(getattr(self, self.key)(x))


def make(key, relu=False, clash=False):
    return lambda: Named(key, relu, clash).eval()
'''


def named_project(tmp_path: Path, models: dict[str, str], extra: str = "") -> None:
    """A project whose models are ``Named`` modules: model name -> the factory's arguments."""
    factories = "".join(f"{name.replace('-', '_')} = make({args})\n" for name, args in models.items())
    (tmp_path / "named.py").write_text(NAMED_MODELS + factories)
    inputs = 'inputs = [{ name = "x", shape = [2, 8], dtype = "float32" }]\n'
    tables = "".join(f'[[models]]\nname = "{name}"\nfactory = "named:{name.replace("-", "_")}"\n'
                     f"{inputs}{extra}" for name in models)
    providers = 'providers = ["torch-cpu", "CPUExecutionProvider"]\n'
    (tmp_path / "parity-gate.toml").write_text(f'baseline-dir = "b"\n{providers}{tables}')


def test_a_name_longer_than_the_files_hold_fails_its_model_alone(tmp_path):
    """A weight's or a weightless module's name one past the files' limit fails its model, named with the
    name, before anything is written: the other model's baseline is written and it is judged (the name
    stopped the whole command, exit 2, with no report and no baseline)."""
    named_project(tmp_path, {"ok": '"inner"', "weights": '"L" * 1018', "relu": '"R" * 1025, relu=True'})
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert_one_line_error(proc, 3, "2 models could not run")
    for model, name in (("weights", "'LLLL"), ("relu", "'RRRR")):
        assert f"{model} not updated: BUILD_FAIL: model `{model}`: name {name}" in proc.stdout, proc.stdout
    assert proc.stdout.count("is 1,025 characters long (the limit is 1,024)") == 2, proc.stdout
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["ok.msgpack.zst"]
    proc = run_cli("check", "--json", "r.json", "--markdown", "r.md", cwd=tmp_path)
    assert_model_error(proc, "BUILD_FAIL", "characters long (the limit is 1,024)")
    models = {m["name"]: m for m in json.loads((tmp_path / "r.json").read_text())["models"]}
    assert models["ok"]["status"] == "pass" and models["ok"]["error"] is None
    assert [models[m]["error"]["status"] for m in ("weights", "relu")] == ["BUILD_FAIL"] * 2
    assert "1,025 characters long" in (tmp_path / "r.md").read_text()


def test_names_as_long_as_the_files_hold_are_recorded_and_judged(tmp_path):
    """At the limit: a weight named with 1,024 characters, a weightless module too."""
    named_project(tmp_path, {"weights": '"L" * 1017', "relu": '"R" * 1024, relu=True'})
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("check", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1].startswith("PASSED"), proc.stdout


def test_a_module_named_as_the_gate_names_a_layer_fails_its_model_alone(tmp_path):
    """A refactor names a module ``(model)``, the gate's name for the outputs, or ``l2#2`` while ``l2`` runs
    twice: the model fails to build, naming the module, never as a model change whose baseline update
    cannot be recorded ("a layer name appears twice", naming none)."""
    named_project(tmp_path, {"outputs": '"mid"', "call": '"l2#2", clash=True'})
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    rename = {"RENAME": "(model)"}
    proc = run_cli("check", "--markdown", "r.md", cwd=tmp_path, env=rename)
    assert_model_error(proc, "BUILD_FAIL", "model `outputs`: module '(model)': names beginning (model) are "
                       "reserved for the model's outputs")
    assert "update-baseline" not in proc.stdout + (tmp_path / "r.md").read_text()
    proc = run_cli("update-baseline", "--model", "call", cwd=tmp_path, env={"RENAME": "l2#2"})
    assert_one_line_error(proc, 3, "call: BUILD_FAIL: model `call`: two layers are named 'l2#2'")


def test_modules_named_like_calls_or_gradients_are_recorded_and_judged(tmp_path):
    """``l2#2`` beside an ``l2`` called once and ``grad:head`` beside gradients name no other layer."""
    named_project(tmp_path, {"names": '"l2#2"'}, extra="gradients = true\n")
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    proc = run_cli("check", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1].startswith("PASSED"), proc.stdout
