"""Failure paths keep reports honest: degenerate outputs, an empty model, a provider that
cannot load the model. Each is a status with the right exit code, never a pass or a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.faults import __file__ as faults_file


def write(tmp: Path, factory: str, providers: str = '["torch-cpu", "CPUExecutionProvider"]',
          rows: int = 2) -> None:
    (tmp / "faults.py").write_text(Path(faults_file).read_text())
    (tmp / "parity-gate.toml").write_text(
        f'providers = {providers}\n[[models]]\nname = "m"\nfactory = "faults:{factory}"\n'
        f'inputs = [{{ name = "x", shape = [{rows}, 16] }}]\n')


@pytest.mark.parametrize("factory, rows, words", [("all_zero", 2, "every element is zero"),
                                                  ("all_nan", 2, "every element is NaN/Inf"),
                                                  ("two_linears", 0, "every output is empty")])
def test_degenerate_outputs_never_pass(tmp_path, factory, rows, words):
    """Outputs all zero, all NaN, or all empty (a zero-size input: nothing is compared, and any change to
    the model would pass) never pass, and the step never offers to re-record."""
    write(tmp_path, factory, rows=rows)
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0 and words in proc.stdout  # warned while baselining
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    first = report["first_regression"]
    assert first["check"] == "degenerate" and words in first["message"] and first["layer"].startswith("(model)")
    step = report["models"][0]["next_step"]
    assert step["kind"] == "degenerate" and not step["command"], step


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
