"""Runs that cannot contaminate each other, through the CLI: a model whose forward builds a cache
(a dict of gathered biases as in timm's LeViT, a table in a plain attribute) or writes into a
buffer is baselined and checked clean, and one case checked alone judges like all cases together
(the float32 run of one case never reaches the next case's float64 reference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.stateful_models import __file__ as models_file


def write(tmp: Path, factory: str) -> None:
    (tmp / "stateful_models.py").write_text(Path(models_file).read_text())
    (tmp / "parity-gate.toml").write_text(
        'providers = ["torch-cpu", "CPUExecutionProvider"]\n[[models]]\nname = "m"\n'
        f'factory = "stateful_models:{factory}"\ninputs = [{{ name = "x", shape = [2, 16] }}]\ninput-sets = 2\n')


@pytest.mark.parametrize("factory", ["bias_cache", "table_cache", "counts_calls"])
def test_state_a_forward_leaves_never_crosses_runs(tmp_path, factory):
    write(tmp_path, factory)
    proc = run_cli("update-baseline", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli("check", "--json", "all.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The second case alone: no first case ran before it, and it judges the same.
    proc = run_cli("check", "--model", "m.s1", "--json", "one.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("all.json", "one.json"):
        for model in json.loads((tmp_path / name).read_text())["models"]:
            assert model["reference"]["dtype"] == "float64"
            rows = {p["name"] + p["precision"]: p for p in model["providers"]}
            assert rows["torch-cpufloat32"]["status"] == "pass" and rows["torch-cpufloat32"]["checked"] == model["layers"]
