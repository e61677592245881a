"""Forwards that change their own state, gated end to end (real export, real ONNX Runtime): a model
whose first eval forward halves its own weights in place (as transformers' RWKV does), and a model of
lazy modules that make their parameters on the first forward. Each run starts from the state the
model was built in, the runs agree, so both are baselined and pass; a weight fault is still named at
its layer. Models: tests/e2e/stateful_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config

HERE = Path(__file__).parent


def _config(tmp: Path, name: str, factory: str) -> Path:  # one model name: the faulted twin meets its baseline
    shutil.copy(HERE / "stateful_models.py", tmp / "stateful_models.py")
    path = tmp / f"{factory}.toml"
    path.write_text(f'baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\n'
                    f'name = "{name}"\nfactory = "stateful_models:{factory}"\ninputs = [{{ name = "x", shape = [2, 16] }}]\n')
    return path


def _check(tmp: Path, factory: str) -> dict:
    cfg = load_config(_config(tmp, "m", factory))
    return commands.check(cfg, cfg.models, cfg.providers).to_dict()


@pytest.mark.parametrize("factory", ["rescales_once", "lazy"])
def test_a_model_whose_forward_changes_its_own_state_is_gated(tmp_path, factory):
    cfg = load_config(_config(tmp_path, "m", factory))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.error is None and updated.unexported is None, updated
    report = _check(tmp_path, factory)
    assert report["verdict"] == "pass", report["first_regression"] or report["models"][0]["error"]
    (model,) = report["models"]
    assert all(p["status"] == "pass" and p["checked"] > 0 for p in model["providers"])
    if factory == "rescales_once":
        faulted = _check(tmp_path, "rescales_once_faulted")
        first = faulted["first_regression"]
        assert (faulted["verdict"], first["layer"], first["check"]) == ("regressed", "block.lin", "reference-drift")
