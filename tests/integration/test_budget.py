"""The memory estimate before a model is built (``gate.model.budget``): counted on the meta
device, compared with ``[isolation] memory-budget-mb``; over it, the model fails at once."""

from __future__ import annotations

import json
import shutil

from gate.model import budget
from tests.conftest import ROOT, run_cli

CONFIG = '''baseline-dir = "baselines"
providers = ["torch-cpu"]

[isolation]
memory-budget-mb = {budget}

[[models]]
name = "wide"
factory = "examples.scale:wide_2_4gb"
inputs = [{{ name = "x", shape = [2, 4096], dtype = "float32" }}]
'''


def _workspace(tmp_path, budget_mb: int):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "parity-gate.toml").write_text(CONFIG.format(budget=budget_mb))
    return tmp_path


def test_weights_are_counted_without_building_them(tmp_path):
    from gate.config import load_config

    cfg = load_config(_workspace(tmp_path, 100_000) / "parity-gate.toml")
    weights = budget.weight_bytes(cfg.models[0], cfg.root)
    assert weights == (36 * (4096 * 4096 + 4096) + 4096 * 16 + 16) * 4


def test_a_model_over_the_budget_fails_early_saying_what_it_needs(tmp_path):
    work = _workspace(tmp_path, 2000)
    proc = run_cli("check", "--json", "report.json", cwd=work, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]
    error = json.loads((work / "report.json").read_text())["models"][0]["error"]
    assert error["status"] == "BUILD_FAIL"
    assert "needs about 3,658 MB of memory (2,417 MB of weights), more than [isolation] memory-budget-mb (2,000 MB)" \
        in error["message"]
    assert "building" not in proc.stderr  # failed before the build
