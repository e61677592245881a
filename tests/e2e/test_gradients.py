"""``gradients = true``: the backward pass of a seeded loss checked like the forward pass, on the
float64 reference and the PyTorch providers; ONNX Runtime says it is forward-only; a change to a
backward pass alone fails at the first gradient it changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import run_cli

CONFIG = """baseline-dir = "b"
providers = ["torch-cpu", "torch-compile", "CPUExecutionProvider"]

[[models]]
name = "silu-net"
factory = "grad_layers:net"
inputs = [{ name = "x", shape = [4, 8] }]
gradients = true
"""


def test_a_backward_only_change_fails_at_its_gradient(tmp_path):
    shutil.copy(Path(__file__).parent / "grad_layers.py", tmp_path / "grad_layers.py")
    (tmp_path / "parity-gate.toml").write_text(CONFIG)
    assert run_cli("update-baseline", cwd=tmp_path).returncode == 0
    passed = run_cli("check", "--json", "r.json", cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    [model] = report["models"]
    # The content key traces the forward only: the reference (its gradients) is never reused.
    assert (model["reuse"]["reference"], model["reuse"]["why"]) == (False, "gradients")
    rows = {p["name"] + ":" + p["precision"]: {r["layer"]: r for r in p["layers"]} for p in model["providers"]}
    grads = [n for n in rows["torch-cpu:float64"] if n.startswith("grad:")]
    # backward order: the last layer's parameters first
    assert grads == ["grad:lin2.bias", "grad:lin2.weight", "grad:lin1.bias", "grad:lin1.weight"]
    for provider in ("torch-cpu:float32", "torch-compile:float32"):  # the backward through inductor too
        assert rows[provider]["grad:lin1.weight"]["status"] == "pass"
        assert 0 < rows[provider]["grad:lin1.weight"]["value"] < 1e-5
    ort = rows["CPUExecutionProvider:float32"]["grad:lin1.weight"]
    assert ort["status"] == "absent" and "forward-only" in ort["message"]

    failed = run_cli("check", "--json", "r.json", cwd=tmp_path, env={"PG_GRAD_FAULT": "1"})
    assert failed.returncode == 1, failed.stdout + failed.stderr
    first = json.loads((tmp_path / "r.json").read_text())["first_regression"]
    assert first["layer"] == "grad:lin1.bias" and first["check"] == "reference-drift"
    assert "FAILED | first regression: silu-net grad:lin1.bias" in failed.stdout
