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


@pytest.mark.parametrize("base,refactor,fault", [("halves", "halves_in_place", "quarters_in_place"),
                                                 ("leaky", "leaky_in_place", None)])
def test_a_forward_that_writes_its_input_changes_its_own_call_alone(tmp_path, base, refactor, fault):
    """`x.div_(2)` for `x / 2`, an in-place first activation: the same values in one call, so it passes
    (each run, the reference's, torch-cpu's, ONNX Runtime's, is given the inputs as built); its twin, the
    input quartered in place where the baseline halved it, fails at the first layer on the reference."""
    cfg = load_config(_config(tmp_path, "m", base))
    (updated,) = commands.update_baseline(cfg, cfg.models, cfg.providers)
    assert updated.error is None and updated.unexported is None, updated
    report = _check(tmp_path, refactor)
    assert report["verdict"] == "pass", report["first_regression"] or report["models"][0]["error"]
    if fault is not None:
        first = _check(tmp_path, fault)["first_regression"]
        assert (first["layer"], first["provider"], first["check"]) == ("lin", "torch-cpu", "reference-drift")
