"""``check`` and ``report`` judge through one function: a refusal made on one path is made on the
other. The bundled tiny-cnn is exported with other inputs than its committed baseline was recorded
for, collected on the CPU EP, and judged both ways: the refused baseline fails its own model
(``BAD_BASELINE``, exit 2), and the other models are judged."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zlib
from dataclasses import replace

import pytest

from gate import commands
from gate.config import load_config
from gate.core.fields import Obj
from gate.core.runs import RunError
from gate.core.status import ErrorStatus, KeyPart, ModelStatus
from gate.render.next_steps import step_words
from tests.conftest import ROOT
from tests.support.projects import examples_project

DECLARED = 'inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]'
OTHER = 'inputs = [{ name = "x", shape = [2, 3, 16, 16], dtype = "float32", low = -2.0, high = 2.0 }]'
REFUSED = (r"baseline `baselines/tiny-cnn.msgpack.zst`: recorded for other inputs than model `tiny-cnn` declares now "
           r"\(input `x`: other values, same dtype and shape \(its seed or range changed\)\)")


@pytest.fixture(scope="module")
def other_inputs(tmp_path_factory):
    """The example project with tiny-cnn's inputs changed (weights as committed), exported and collected."""
    tmp = tmp_path_factory.mktemp("judge")
    path = examples_project(tmp, baselines=True)
    text = path.read_text()
    assert DECLARED in text
    path.write_text(text.replace(DECLARED, OTHER))
    cfg = load_config(path)
    tiny = cfg.select_models(["tiny-cnn"])
    commands.export_models(cfg, tiny, cfg.select_providers(["torch-cpu"]), tmp / "export")
    commands.collect(tmp / "export", cfg.select_providers(["CPUExecutionProvider"]), tmp / "cpu.msgpack.zst")
    return tmp, cfg


def assert_refused(report, message: str) -> None:
    """tiny-cnn fails on its baseline, with the message; every other model is judged all the same."""
    by_name = {m.name: m for m in report.models}
    tiny = by_name.pop("tiny-cnn")
    assert tiny.status == ModelStatus.ERROR and tiny.error.error_status == ErrorStatus.BAD_BASELINE
    assert re.match(message, tiny.error.message), tiny.error.message
    assert report.exit_code == 2
    assert all(m.error is None or m.error.error_status != ErrorStatus.BAD_BASELINE for m in by_name.values())


def test_report_refuses_a_baseline_recorded_for_other_inputs(other_inputs, monkeypatch):
    tmp, cfg = other_inputs
    monkeypatch.chdir(tmp)
    report = commands.report_files(cfg, [tmp / "export", tmp / "cpu.msgpack.zst"])
    assert_refused(report, REFUSED)
    # tiny-transformer has no result file here: judged as such, not stopped by tiny-cnn's baseline
    transformer = next(m for m in report.models if m.name == "tiny-transformer")
    assert transformer.error.error_status == ErrorStatus.NO_RESULT


def test_the_report_command_says_it_in_one_line_and_exits_2(other_inputs):
    tmp, _ = other_inputs
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "report", "export", "cpu.msgpack.zst"], cwd=tmp,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith(
        "ERROR | tiny-cnn (and 1 more model): BAD_BASELINE: baseline `baselines/tiny-cnn.msgpack.zst`: "
        "recorded for other inputs")


def test_check_refuses_it_too(other_inputs, monkeypatch):
    """Only the inputs changed: the step is the plain re-record."""
    tmp, cfg = other_inputs
    monkeypatch.chdir(tmp)
    report = commands.check(cfg, cfg.select_models(["tiny-cnn"]), cfg.select_providers(["torch-cpu"]))
    assert_refused(report, REFUSED)
    message = report.models[0].error.message
    assert "weights" not in message and "code" not in message
    assert step_words(report.models[0]).startswith("its baseline file cannot judge it (the error above says "
                                                   "why): re-record it with")


def _check_faulted(cfg, tmp, fault: str):
    """tiny-cnn checked with ``fault`` (a line of code on its built model ``m``) and the changed inputs."""
    name = f"judge_fault_{zlib.crc32(fault.encode())}"  # a module of its own: imported once per process
    (tmp / f"{name}.py").write_text("from examples.zoo import tiny_cnn\n\n\ndef faulted():\n"
                                    f"    m = tiny_cnn()\n    {fault}\n    return m\n")
    (spec,) = cfg.select_models(["tiny-cnn"])
    faulted = replace(spec, factory=f"{name}:faulted")
    return commands.check(cfg, (faulted,), cfg.select_providers(["torch-cpu"]))


@pytest.fixture(scope="module")
def recorded_here(tmp_path_factory):
    """tiny-cnn's baseline recorded by this parity-gate (its trace is comparable), then its inputs changed."""
    tmp = tmp_path_factory.mktemp("judge_here")
    path = examples_project(tmp, baselines=False)
    cfg = load_config(path)
    commands.update_baseline(cfg, cfg.select_models(["tiny-cnn"]), cfg.select_providers(["torch-cpu"]))
    path.write_text(path.read_text().replace(DECLARED, OTHER))
    return tmp, load_config(path)


def test_a_code_change_beside_the_inputs_is_said_and_re_recorded_only_if_intended(recorded_here, monkeypatch):
    """An eps changed with the inputs: a re-record for the new inputs would take it as the truth. The refusal
    names it, as it names weights, and the step re-records only if it is intended. Twin: the inputs alone."""
    tmp, cfg = recorded_here
    monkeypatch.chdir(tmp)
    alone = commands.check(cfg, cfg.select_models(["tiny-cnn"]), cfg.select_providers(["torch-cpu"]))
    assert_refused(alone, REFUSED + "$")
    assert step_words(alone.models[0]).startswith("its baseline file cannot judge it (the error above says "
                                                  "why): re-record it with")
    report = _check_faulted(cfg, tmp, "m.stem[1].eps = 1e-3")
    assert_refused(report, REFUSED + r"; its code changed too \(the traced float32 forward differs\): "
                   "a re-record takes it as it is$")
    (model,) = report.models
    assert model.error.changed == (KeyPart.CODE,)
    assert RunError.from_dict(Obj(model.error.to_dict(), "report")).changed == (KeyPart.CODE,)
    step = step_words(model)
    assert "and its code changed too: check that change with the baseline's inputs first" in step, step
    assert step.endswith("only if it is intended."), step


def test_a_weight_change_beside_the_inputs_is_said(other_inputs, monkeypatch):
    """Re-recording for the new inputs would take weights that changed meanwhile as they are: the refusal
    names them (its twin, the weights as recorded, says nothing of them: above)."""
    tmp, cfg = other_inputs
    monkeypatch.chdir(tmp)
    report = _check_faulted(cfg, tmp, "m.fc.weight.data[0, 0] += 1e-3")
    assert_refused(report, REFUSED + r"; its weights changed too \(tensor `fc.weight`\): a re-record takes")
    assert "and its weights changed too" in step_words(report.models[0])


def test_a_baseline_of_another_model_is_refused_on_both_paths(other_inputs, monkeypatch, tmp_path):
    tmp, cfg = other_inputs
    monkeypatch.chdir(tmp)
    own = tmp / "baselines" / "tiny-cnn.msgpack.zst"
    kept = tmp_path / "tiny-cnn.msgpack.zst"
    shutil.copy(own, kept)
    try:
        shutil.copy(tmp / "baselines" / "tiny-transformer.msgpack.zst", own)
        wrong = r"baseline `baselines/tiny-cnn.msgpack.zst`: holds model `tiny-transformer`, not `tiny-cnn`"
        assert_refused(commands.report_files(cfg, [tmp / "export", tmp / "cpu.msgpack.zst"]), wrong)
        report = commands.check(cfg, cfg.select_models(["tiny-cnn"]), cfg.select_providers(["torch-cpu"]))
        assert_refused(report, wrong)
        assert report.models[0].layers == 0  # refused before the model runs
    finally:
        shutil.copy(kept, own)
