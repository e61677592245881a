"""What can be gated is gated: when neither exporter can build the graph (``aten::histc``, as a Hugging
Face Mixtral hits), the ONNX Runtime rows say ``EXPORT_FAIL`` with the exporter's reason, the
PyTorch providers (the float64 reference, torch-cpu, torch.compile) are run and judged against the
baseline all the same, ``update-baseline`` records them, and the verdict is still an error (exit 3):
what ships cannot be built (docs/verdict.md)."""

from __future__ import annotations

import json
from pathlib import Path

from gate.formats.baseline import read_baseline
from tests.conftest import run_cli
from tests.e2e.histc_models import __file__ as models_file

REASON = "aten_histc with min == max (0.0) is not supported"  # the dynamo exporter's innermost cause


def write(tmp: Path, factory: str) -> None:
    (tmp / "histc_models.py").write_text(Path(models_file).read_text())
    (tmp / "parity-gate.toml").write_text(
        'providers = ["torch-cpu", "torch-compile", "CPUExecutionProvider"]\n[[models]]\nname = "moe"\n'
        f'factory = "histc_models:{factory}"\ninputs = [{{ name = "x", shape = [2, 16] }}]\n')


def _providers(report: dict) -> dict[str, dict]:
    return {f"{p['name']} {p['precision']}": p for p in report["models"][0]["providers"]}


def test_an_unexportable_model_gates_its_pytorch_side(tmp_path):
    write(tmp_path, "router")
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "moe → baselines/moe.msgpack.zst" in proc.stdout and "Torch IR graph" not in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert "recorded the reference and the PyTorch providers only" in last and REASON in last
    baseline = read_baseline(tmp_path / "baselines" / "moe.msgpack.zst")
    assert baseline.meta.exporter is None and baseline.meta.graph_digest is None
    assert sorted({e.target.provider for e in baseline.entries}) == ["torch-compile", "torch-cpu"]

    proc = run_cli("check", "--json", "r.json", "--markdown", "r.md", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "error" and report["first_regression"] is None
    assert report["models"][0]["error"]["status"] == "EXPORT_FAIL"
    rows = _providers(report)
    for name in ("torch-cpu float64", "torch-cpu float32", "torch-compile float32"):
        assert rows[name]["status"] == "pass" and rows[name]["checked"] > 0, rows[name]
    ort = rows["CPUExecutionProvider float32"]
    assert (ort["status"], ort["error_status"], ort["checked"]) == ("error", "EXPORT_FAIL", 0)
    assert ort["reason"].startswith("not run: model `moe`: export failed (dynamo: NotImplementedError: ")
    assert REASON in ort["reason"] and "TorchScript: UnsupportedOperatorError" in ort["reason"]
    assert "not checked: CPUExecutionProvider (no ONNX graph); checked all the same: torch-cpu float64, torch-cpu " \
           "float32, torch-compile float32" in proc.stdout.replace("\n", " ")
    markdown = (tmp_path / "r.md").read_text()
    assert "Not checked: `CPUExecutionProvider` float32 (no ONNX graph); checked against the baseline all the " \
           "same: `torch-cpu` float64, `torch-cpu` float32, `torch-compile` float32." in markdown
    assert "⛔" not in markdown  # one mark per cause: the model's own line lists what is not checked


def test_a_change_is_still_named_when_the_export_fails(tmp_path):
    write(tmp_path, "router")
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 3
    write(tmp_path, "router_changed")
    proc = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the export failing outranks the regression
    report = json.loads((tmp_path / "r.json").read_text())
    first = report["first_regression"]
    assert report["verdict"] == "error" and (first["layer"], first["provider"]) == ("up", "torch-cpu")
    assert _providers(report)["torch-cpu float64"]["status"] == "regressed"
