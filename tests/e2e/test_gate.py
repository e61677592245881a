"""The gate on its own example models: real exports, real ONNX Runtime sessions, the
committed baselines, and the CLI as a process.

Faults are injected into the example models (tests/e2e/faults.py); the gate must fail and
name the injected module as the first regression. Benign changes must pass.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.formats.baseline import encode_baseline, read_document
from tests.conftest import ROOT, run_cli

sys.path.insert(0, str(Path(__file__).parent))
import faults  # noqa: E402

EXAMPLE_INPUTS = {
    "tiny-cnn": '[{ name = "x", shape = [2, 3, 16, 16], dtype = "float32" }]',
    "tiny-transformer": '[{ name = "x", shape = [2, 8, 16], dtype = "float32" }]',
}


def write_config(tmp: Path, model: str, factory: str, baseline_dir: Path = ROOT / "baselines",
                 providers: str = '["torch-cpu", "CPUExecutionProvider"]', extra: str = "") -> Path:
    path = tmp / "parity-gate.toml"
    shutil.copy(Path(faults.__file__), tmp / "faults.py")
    path.write_text(
        f'baseline-dir = "{baseline_dir.as_posix()}"\nproviders = {providers}\n\n'
        f'[[models]]\nname = "{model}"\nfactory = "{factory}"\ninputs = {EXAMPLE_INPUTS[model]}\n{extra}'
    )
    return path


def check(config: Path) -> dict:
    cfg = load_config(config)
    return commands.check(cfg, cfg.models, cfg.providers).to_dict()


def test_examples_pass_against_committed_baselines():
    cfg = load_config(ROOT / "pyproject.toml")
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == "pass", json.dumps(report["first_regression"])
    names = [m["name"] for m in report["models"]]
    assert names == ["tiny-cnn", "tiny-transformer"]
    cnn = report["models"][0]
    ort = next(p for p in cnn["providers"] if p["name"] == "CPUExecutionProvider")
    rows = {r["layer"]: r for r in ort["layers"]}
    # BatchNorm folded into the conv: the conv has no value of its own, the BN row carries the fused output.
    assert rows["block1.conv1"]["status"] == "folded"
    assert rows["block1.bn1"]["status"] == "pass"
    # The ReLU module runs twice per block; both calls are rows. Containers are rows too.
    assert {"block1.relu", "block1.relu#2", "block1", "(model)"} <= set(rows)
    tf = {r["layer"] for p in report["models"][1]["providers"] for r in p["layers"]}
    assert {"blocks.1.attn[0]", "blocks.1.attn[1]", "blocks.0.attn.merge"} <= tf


@pytest.mark.parametrize("fault", sorted(faults.INJECTED))
def test_injected_fault_is_caught_at_its_layer(tmp_path, fault):
    model, layer = faults.INJECTED[fault]
    report = check(write_config(tmp_path, model, f"faults:{fault}"))
    assert report["verdict"] == "regressed"
    first = report["first_regression"]
    assert first["model"] == model
    assert first["layer"] == layer, first
    # A change of the model moves the float64 reference: reported as such, not blamed on a runtime.
    assert first["provider"] == "torch-cpu" and first["precision"] == "float64"
    assert first["check"] in ("reference-drift", "nonfinite")
    if fault == "cnn_nan":
        assert first["check"] == "nonfinite" and "NaN" in first["message"]


@pytest.mark.parametrize("factory", ["faults:cnn_relu_not_inplace", "faults:cnn_reordered"])
def test_benign_refactor_passes(tmp_path, factory):
    report = check(write_config(tmp_path, "tiny-cnn", factory))
    assert report["verdict"] == "pass", report["first_regression"]


def test_thread_counts_changed_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_GATE_THREADS", "1")
    try:
        report = check(write_config(tmp_path, "tiny-transformer", "examples.zoo:tiny_transformer"))
    finally:
        import torch

        torch.set_num_threads(2)
    assert report["verdict"] == "pass", report["first_regression"]


def test_runtime_regression_is_blamed_on_the_runtime(tmp_path):
    """Baseline a runtime with a smaller error than it has now: only that runtime regresses."""
    base = tmp_path / "baselines"
    base.mkdir()
    doc = read_document(ROOT / "baselines" / "tiny-cnn.msgpack.zst")
    for entry in doc["providers"]["CPUExecutionProvider"].values():
        for name, layer in entry["layers"].items():
            if name == "block2.bn1" and layer["err"] is not None:
                layer["err"] = layer["err"] / 100
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    # The default floor (1e-6) would absorb this; a per-layer override (glob) tightens it. Only the
    # EP runs: torch-cpu's own error at block2.bn1 sits at half its tightened limit, which another
    # CPU's float32 rounding could cross.
    extra = 'layer-tolerances = [{ layers = "block2.bn*", floor = 1e-9 }]\n'
    report = check(write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base, extra=extra,
                                providers='["CPUExecutionProvider"]'))
    first = report["first_regression"]
    assert report["verdict"] == "regressed"
    assert (first["provider"], first["layer"], first["check"]) == ("CPUExecutionProvider", "block2.bn1", "error-growth")
    assert first["value"] > first["threshold"]


def test_user_flow_update_then_check_then_regress(tmp_path):
    """A user's repository: update-baseline writes the file, check passes, a numeric change fails."""
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=Path("baselines"))
    # The factory lives in the repo root; the config's folder is on sys.path, so copy the example.
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "baselines" / "tiny-cnn.msgpack.zst").is_file()
    assert "new baseline" in proc.stdout
    proc = run_cli("check", "--json", "report.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("PASSED")
    config.write_text(config.read_text().replace("examples.zoo:tiny_cnn", "faults:cnn_bn_eps"))
    proc = run_cli("check", "--json", "report.json", cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("FAILED") and "block1.bn2" in last and "torch-cpu" in last
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["first_regression"]["layer"] == "block1.bn2"


def test_missing_baseline_fails_and_says_how_to_create_it(tmp_path):
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "none")
    report = check(config)
    assert report["verdict"] == "regressed"
    assert report["models"][0]["status"] == "no-baseline"
    assert "parity-gate update-baseline --model tiny-cnn" in report["models"][0]["message"]


def test_update_baseline_twice_writes_the_same_bytes(tmp_path):
    """Latency is measured, not derived: it is kept while it stays within its band, so an
    unchanged model rewrites a byte-identical baseline."""
    from gate.config import load_config as load

    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b")
    cfg = load(config)
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    first = (tmp_path / "b" / "tiny-cnn.msgpack.zst").read_bytes()
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert (tmp_path / "b" / "tiny-cnn.msgpack.zst").read_bytes() == first
    assert updated.changes == ["no change"]


def _provider(report: dict, name: str) -> dict:
    return next(p for p in report["models"][0]["providers"] if p["name"] == name)


def test_latency_is_timed_where_it_is_read(tmp_path):
    """update-baseline records the shipped graph's latency; check times it only when
    `max-slowdown` gates it, and then compares it with the recorded one."""
    from gate.config import load_config as load

    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=tmp_path / "b",
                          providers='["CPUExecutionProvider"]')
    cfg = load(config)
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    entry = next(iter(read_document(tmp_path / "b" / "tiny-cnn.msgpack.zst")["providers"]["CPUExecutionProvider"].values()))
    assert entry["latency_ms"] > 0
    ort = _provider(check(config), "CPUExecutionProvider")
    assert ort["latency_ms"] is None and ort["baseline_latency_ms"] == entry["latency_ms"]
    config.write_text(config.read_text().replace("providers =", "max-slowdown = 1000.0\nproviders =", 1))
    ort = _provider(check(config), "CPUExecutionProvider")
    assert ort["latency_ms"] > 0 and ort["status"] == "pass"


def test_calibrated_noise_widens_thresholds(tmp_path):
    """update-baseline --calibrate records run-to-run noise per layer; a layer whose recorded
    noise is large is not failed for moving within it."""
    from gate.config import load_config as load

    base = tmp_path / "b"
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base)
    cfg = load(config)
    commands.update_baseline(cfg, cfg.models, cfg.providers, calibrate=True)
    doc = read_document(base / "tiny-cnn.msgpack.zst")
    assert all("noise" in layer and layer["noise"] >= 0 for layer in doc["layers"])
    cpu = next(iter(doc["providers"]["CPUExecutionProvider"].values()))
    assert all("noise" in row for row in cpu["layers"].values() if row["err"] is not None)
    assert check(config)["verdict"] == "pass"
    # Shrink one layer's recorded error 100x: a regression by the floor-less limit below...
    for row in cpu["layers"].values():
        row["err"] = row["err"] / 100 if row["err"] else row["err"]
    extra = 'layer-tolerances = [{ layers = "*", floor = 1e-12 }]\n'
    config = write_config(tmp_path, "tiny-cnn", "examples.zoo:tiny_cnn", baseline_dir=base, extra=extra)
    for row in cpu["layers"].values():
        row["noise"] = 0.0
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    assert check(config)["first_regression"]["check"] == "error-growth"
    # ...but within the noise calibration measured (here: recorded as large), it passes.
    for row in cpu["layers"].values():
        row["noise"] = row["err"] * 100 if row["err"] else 0.0
    (base / "tiny-cnn.msgpack.zst").write_bytes(encode_baseline(doc))
    report = check(config)
    ort = next(p for p in report["models"][0]["providers"] if p["name"] == "CPUExecutionProvider")
    assert ort["status"] == "pass", ort["first_regression"]
