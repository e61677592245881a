"""A change that loosens the config that judges it (``check --changed-since``, gate.commands.loosened), on
real exports and ONNX Runtime sessions: a weight fault hidden by a raised tolerance passes only under the
change's config and says so, naming where the base's limits fail it; a provider the change drops is named.
Twins: the same loosening with no fault says nothing; the fault under the base's config fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gate import commands
from gate.config import load_config
from gate.render import render_markdown

MODEL = """import torch
from torch import nn
from pathlib import Path


def net():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    with torch.no_grad():
        m[2].weight.mul_(float((Path(__file__).parent / "scale.txt").read_text()))
    return m
"""
BASE = """baseline-dir = "baselines"
providers = ["torch-cpu", "CPUExecutionProvider"]

[[models]]
name = "net"
factory = "models:net"
inputs = [{ name = "x", shape = [2, 8], dtype = "float32" }]
"""
LOOSE = BASE.replace('"CPUExecutionProvider"]\n',
                     '"CPUExecutionProvider"]\ntolerance = { reference = 1e-2 }\n')


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("loosened")
    (tmp / "models.py").write_text(MODEL)
    (tmp / "scale.txt").write_text("1.0")
    (tmp / "parity-gate.toml").write_text(BASE)
    cfg = load_config(tmp / "parity-gate.toml")
    commands.update_baseline(cfg, cfg.models, cfg.providers)
    return tmp


def _check(project: Path, text: str, scale: str):
    (project / "scale.txt").write_text(scale)
    cfg = load_config(project / "parity-gate.toml", text)
    base = load_config(project / "parity-gate.toml", BASE)
    report = commands.check(cfg, cfg.models, cfg.providers, base=base)
    return report, report.models[0]


def test_a_fault_a_raised_tolerance_hides_passes_only_saying_so_and_its_twins(project):
    report, model = _check(project, LOOSE, "1.001")
    assert report.verdict == "pass" and model.loosened is not None
    first = model.loosened.first
    assert (first.layer, first.provider, str(first.check)) == ("2", "torch-cpu", "reference-drift")
    said = "⚠️ `net`: it passes only under limits this change's config loosened: under the base's it fails at"
    assert said in render_markdown(report)
    # the same loosening and no fault: the base's limits pass it too, nothing to say
    report, model = _check(project, LOOSE, "1.0")
    assert report.verdict == "pass" and model.loosened is None
    # the fault under the base's own config fails as ever
    report, model = _check(project, BASE, "1.001")
    assert report.verdict == "regressed" and model.loosened is None


def test_a_provider_the_change_drops_is_named(project):
    report, model = _check(project, BASE.replace(', "CPUExecutionProvider"', ""), "1.0")
    assert report.verdict == "pass" and model.loosened is not None
    assert (model.loosened.first, model.loosened.dropped) == (None, ("CPUExecutionProvider",))


def test_the_config_at_the_base_comes_from_git(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "parity-gate.toml").write_text(BASE)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    (tmp_path / "parity-gate.toml").write_text(LOOSE)
    cfg = load_config(tmp_path / "parity-gate.toml")
    base = commands.base_config(cfg, "HEAD")
    assert base is not None
    assert (base.models[0].tolerance.reference, cfg.models[0].tolerance.reference) == (1e-9, 1e-2)
    git("rm", "-q", "--cached", "parity-gate.toml")
    git("commit", "-qm", "no config")
    assert commands.base_config(cfg, "HEAD") is None  # a config new in the change: nothing was loosened
