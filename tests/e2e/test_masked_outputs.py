"""Masked values on real exports and real ONNX Runtime sessions: a model masking with
``torch.finfo(dtype).min`` (-DBL_MAX in the float64 reference, -FLT_MAX in a float32 runtime, both counted
as -Inf) passes unchanged, and a fault in the values it does not mask fails where it is, as with a -inf
mask. Models: tests/e2e/mask_models.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.verdict.report_file import report_document

HERE = Path(__file__).parent
ROWS = '[{ name = "x", shape = [4, 8], dtype = "float32" }]'
TOKENS = '[{ name = "x", shape = [2, 6, 8], dtype = "float32" }]'
MODELS = (("policy-min", "policy_min", ROWS), ("policy-inf", "policy_inf", ROWS),
          ("att", "attention", TOKENS))


def _config(tmp: Path, name: str, factory: str, inputs: str) -> Path:
    shutil.copy(HERE / "mask_models.py", tmp / "mask_models.py")
    path = tmp / f"{factory}.toml"
    path.write_text('baseline-dir = "baselines"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n'
                    f'[[models]]\nname = "{name}"\nfactory = "mask_models:{factory}"\ninputs = {inputs}\n')
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("masked")
    for name, factory, inputs in MODELS:
        cfg = load_config(_config(tmp, name, factory, inputs))
        commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def check(tmp: Path, name: str, factory: str, inputs: str) -> dict:
    cfg = load_config(_config(tmp, name, factory, inputs))
    return report_document(commands.check(cfg, cfg.models, cfg.providers))


@pytest.mark.parametrize("fill", ["min", "inf"])
def test_a_masked_output_passes_unchanged_and_fails_where_its_values_moved(recorded, fill):
    clean = check(recorded, f"policy-{fill}", f"policy_{fill}", ROWS)
    assert clean["verdict"] == "pass", clean["first_regression"]
    faulted = check(recorded, f"policy-{fill}", f"policy_{fill}_faulted", ROWS)
    first = faulted["first_regression"]
    assert faulted["verdict"] == "regressed", faulted
    assert (first["layer"], first["provider"], first["check"]) == ("(model)", "torch-cpu", "reference-drift")
    assert 5e-5 < first["value"] < 2e-4, first


def test_a_mask_inside_the_model_fails_first_where_the_values_moved(recorded):
    report = check(recorded, "att", "attention_faulted", TOKENS)
    first = report["first_regression"]
    assert report["verdict"] == "regressed", report
    assert (first["layer"], first["provider"], first["check"]) == ("scores", "torch-cpu", "reference-drift")
