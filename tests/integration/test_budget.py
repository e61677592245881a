"""The memory estimate before a model is built (``gate.model.budget``): counted on the meta
device, compared with ``[isolation] memory-budget-mb``; over it, the model fails at once."""

from __future__ import annotations

import json
import shutil

import pytest

from gate.config.types import InputSpec, ModelSpec
from gate.core.failure import ModelError
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


def _inputs(*shapes):
    return ModelSpec(name="m", factory="examples.zoo:tiny_cnn", where="models[1]",
                     inputs=tuple(InputSpec(f"x{i}", shape) for i, shape in enumerate(shapes)))


def test_declared_inputs_are_counted_before_they_are_drawn_and_refused_past_the_budget():
    budget.check_inputs(_inputs((10,), (249_990,)), 1001)  # float32: 1 MB of inputs, exactly at the limit
    with pytest.raises(ModelError) as caught:
        budget.check_inputs(_inputs((10,), (249_991,)), 1001)
    assert caught.value.error_status == "BUILD_FAIL"
    assert str(caught.value) == ("model `m`: `models[1].inputs[2].shape`: [249991] of float32 is 1 MB: with "
                                 "its inputs the model needs about 1,002 MB of memory, more than [isolation] "
                                 "memory-budget-mb (1,001 MB)")
    with pytest.raises(ModelError, match=r"`models\[1\]\.inputs\[1\]\.shape`: \[4294967296, 4294967296, "
                       r"4294967296\] of float32 is [\d,]+ MB: .* more than this machine's memory"):
        budget.check_inputs(_inputs((2**32,) * 3), None)  # past what an array can index, too


HUGE = '''providers = ["torch-cpu"]
[[models]]
name = "ok"
factory = "examples.zoo:tiny_cnn"
inputs = [{ name = "x", shape = [1, 3, 16, 16] }]
[[models]]
name = "huge"
factory = "examples.zoo:tiny_cnn"
inputs = [{ name = "x", shape = [1000000, 1000000, 3, 16] }]
'''


def test_inputs_too_large_to_allocate_fail_their_model_alone_in_validate_and_check(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "parity-gate.toml").write_text(HUGE)
    why = "model `huge`: `models[2].inputs[1].shape`: [1000000, 1000000, 3, 16] of float32 is 192,000,000 MB"
    proc = run_cli("validate", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert why in " ".join(proc.stderr.split()) and "ok: 1 input(s)" in proc.stdout
    proc = run_cli("check", "--json", "report.json", cwd=tmp_path, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]
    models = {m["name"]: m for m in json.loads((tmp_path / "report.json").read_text())["models"]}
    assert models["ok"]["status"] == "no-baseline" and models["ok"]["layers"]  # judged
    assert models["huge"]["error"]["status"] == "BUILD_FAIL" and why in models["huge"]["error"]["message"]
