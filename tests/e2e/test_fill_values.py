"""Layers holding huge fill values (a mask's -1e30 or -1e9) beside ordinary ones: the fills dominate the
tensor's norm, so a change of every ordinary value moves relative L2 by 1e-35; the order statistics off
the fill plateau see it, and it fails where it happened. A rewrite of the same values passes. Real exports,
real ONNX Runtime; models: tests/e2e/fill_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import recorded as recorded_projects

HERE = Path(__file__).parent
FACTORIES = {"logits": ("logits", "[4, 8]"), "logits9": ("logits_1e9", "[4, 8]"),
             "attention": ("attention", "[2, 6, 16]"), "picked": ("picked", "[64, 8]")}


def _config(tmp: Path, model: str, factory: str) -> Path:
    shutil.copy(HERE / "fill_models.py", tmp / "fill_models.py")
    path = tmp / "parity-gate.toml"
    path.write_text('providers = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\n'
                    f'name = "{model}"\nfactory = "fill_models:{factory}"\n'
                    f'inputs = [{{ name = "x", shape = {FACTORIES[model][1]}, dtype = "float32" }}]\n')
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    models = ((model, factory) for model, (factory, _) in FACTORIES.items())
    return recorded_projects.record(tmp_path_factory.mktemp("fills"), _config, models)


def check(tmp: Path, model: str, factory: str) -> dict:
    return recorded_projects.check(tmp, _config, model, factory)


@pytest.mark.parametrize("model, factory, layer", [("logits", "logits_hotter", "constrain"),
                                                   ("logits9", "logits_1e9_hotter", "constrain"),
                                                   ("attention", "attention_rescaled", "scores")])
def test_ordinary_values_beside_fills_that_moved_fail_where_they_moved(recorded, model, factory, layer):
    report = check(recorded, model, factory)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", report
    where = (first["layer"], first["provider"], first["check"])
    assert where == (layer, "torch-cpu", "reference-drift"), first
    assert first["value"] == pytest.approx(1e-4, rel=0.01) and "quantile q0." in first["message"], first


@pytest.mark.parametrize("model, factory", [("logits", "logits"), ("logits", "logits_where"),
                                            ("attention", "attention")])
def test_layers_with_fills_computed_the_same_way_again_pass(recorded, model, factory):
    report = check(recorded, model, factory)
    assert report["verdict"] == "pass", report["first_regression"]


@pytest.mark.parametrize("model, factory, check", [("logits9", "logits_1e9", "error-growth"),
                                                   ("picked", "picked", "distribution")])
@pytest.mark.parametrize("transform, verdict", [("shifted_before_mask", "regressed"), ("unchanged", "pass")])
def test_a_runtime_that_moved_the_values_beside_fills_fails_where_it_moved(tmp_path, model, factory, check,
                                                                         transform, verdict):
    """Only the shipped graph changed: 1e-3 added to the values the -1e9 mask keeps, inside `constrain`.
    Relative L2 against the reference is 1e-12 there; the order statistics off the fill plateau see it. In
    `picked` the rows masked are those a threshold keeps, more in float32 than in float64: the runtime is
    judged by the rules of a data-dependent layer, whose magnitudes the fills dominate too."""
    from gate import commands
    from gate.config import load_config

    shutil.copy(HERE / "fill_models.py", tmp_path / "fill_models.py")
    text = _config(tmp_path, model, factory).read_text()
    base = load_config(_config(tmp_path, model, factory))
    commands.update_baseline(base, base.models, base.providers)
    (tmp_path / "parity-gate.toml").write_text(text + f'transform = "fill_models:{transform}"\n')
    cfg = load_config(tmp_path / "parity-gate.toml")
    report = commands.check(cfg, cfg.models, cfg.providers).to_dict()
    assert report["verdict"] == verdict, report["first_regression"]
    if verdict == "regressed":
        first = report["first_regression"]
        where = (first["layer"], first["provider"], first["check"])
        assert where == ("constrain", "CPUExecutionProvider", check), first
