"""Failure paths keep reports honest: degenerate outputs, an empty model, a provider that
cannot load the model. Each is a status with the right exit code, never a pass or a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.faults import __file__ as faults_file


def write(tmp: Path, factory: str, providers: str = '["torch-cpu", "CPUExecutionProvider"]') -> None:
    (tmp / "faults.py").write_text(Path(faults_file).read_text())
    (tmp / "parity-gate.toml").write_text(
        f'providers = {providers}\n[[models]]\nname = "m"\nfactory = "faults:{factory}"\n'
        'inputs = [{ name = "x", shape = [2, 16] }]\n')


@pytest.mark.parametrize("factory, words", [("all_zero", "every element is zero"),
                                            ("all_nan", "every element is NaN/Inf")])
def test_degenerate_outputs_never_pass(tmp_path, factory, words):
    write(tmp_path, factory)
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0 and words in proc.stdout  # warned while baselining
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    first = report["first_regression"]
    assert first["check"] == "degenerate" and words in first["message"] and first["layer"].startswith("(model)")


def test_empty_model_is_an_error_status(tmp_path):
    write(tmp_path, "empty")
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 3
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "error" and report["models"][0]["error"]["status"] == "EMPTY"
    assert proc.stdout.strip().splitlines()[-1].startswith("ERROR | m: EMPTY")


def test_provider_that_fails_to_load_is_reported(tmp_path):
    """A broken ONNX file on the collecting runner: LOAD_FAIL for that provider, exit 3."""
    write(tmp_path, "all_zero")
    assert run_cli("export", "--out", "ex", "--provider", "torch-cpu", cwd=tmp_path).returncode == 0
    model = tmp_path / "ex" / "m" / "model.onnx"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 3])
    proc = run_cli("collect", "--from", "ex", "--provider", "CPUExecutionProvider", "--out", "cpu.msgpack.zst",
                   cwd=tmp_path)
    assert proc.returncode == 0 and "CPUExecutionProvider" in proc.stdout and "error" in proc.stdout
    proc = run_cli("report", "ex", "cpu.msgpack.zst", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    ort = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    assert ort["status"] == "error" and ort["error_status"] == "LOAD_FAIL", ort
