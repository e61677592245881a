"""A ``layer-tolerances`` rule whose glob matches no layer of its model (a misspelt tightening) fails
``check`` and is said by ``update-baseline``, by its key; a rule that matches only a layer the exporter
folds away, or only in one case of the model, matches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import run_cli

CONFIG = """baseline-dir = "b"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "net"
factory = "tolerance_layers:net"
inputs = [{ name = "x", shape = [2, 4, 6] }]
batch-sizes = [2, 8]
layer-tolerances = [{ layers = "conv", floor = 1e-5 }, { layers = "wide", floor = 1e-5 }, RULE]
"""
SAID = '`models[1].layer-tolerances[3].layers = "fc_2"` matches no layer of `net`'


def _project(tmp_path: Path, rule: str) -> Path:
    shutil.copy(Path(__file__).parent / "tolerance_layers.py", tmp_path / "tolerance_layers.py")
    (tmp_path / "parity-gate.toml").write_text(CONFIG.replace("RULE", rule))
    return tmp_path


def test_a_rule_that_matches_no_layer_fails_check_by_its_key(tmp_path):
    project = _project(tmp_path, '{ layers = "fc_2", ceiling = 1e-3 }')
    updated = run_cli("update-baseline", cwd=project)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert updated.stdout.count(SAID) == 2  # once per case: each fails `check`
    checked = run_cli("check", "--json", "r.json", cwd=project)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    report = json.loads((project / "r.json").read_text())
    for model in report["models"]:
        [audit] = [a for a in model["audits"] if a["check"] == "layer-tolerances"]
        assert audit["status"] == "fail" and audit["message"].startswith(SAID)
        assert model["next_step"]["kind"] == "layer-tolerances"
    first = report["first_regression"]
    assert (first["check"], first["provider"]) == ("layer-tolerances", "(config)")


def test_rules_that_match_pass_silently_a_folded_layer_and_one_case_only_included(tmp_path):
    project = _project(tmp_path, '{ layers = "fc2", ceiling = 1e-3 }')
    updated = run_cli("update-baseline", cwd=project)
    assert updated.returncode == 0 and "matches no layer" not in updated.stdout, updated.stdout
    checked = run_cli("check", "--json", "r.json", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads((project / "r.json").read_text())
    rows = {m["name"]: {r["layer"]: r["status"] for p in m["providers"] if p["name"] == "CPUExecutionProvider"
                        for r in p["layers"]} for m in report["models"]}
    assert rows["net.b2"]["conv"] == "folded" and "wide" not in rows["net.b2"] and "wide" in rows["net.b8"]
    assert not any(a["check"] == "layer-tolerances" for m in report["models"] for a in m["audits"])
