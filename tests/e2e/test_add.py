"""A second model in a repository set up by ``init``: ``parity-gate add`` (and ``init`` run again)
adds it without touching the first, merges its requirements into the workflow and the constraints
file and records its baseline; ``validate`` warns when the workflow would not install what a model
imports. Real git, real processes."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import run_cli

MODELS = '''import torch
import torchvision


def cnn():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def mlp():
    return torchvision.ops.MLP(4, [8, 4])


def other():
    return torch.nn.Linear(4, 2)
'''
# The first model's module imports nothing beyond torch: the workflow init writes installs nothing extra.
FIRST = "import torch\n\n\ndef cnn():\n    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())\n"
WORKFLOW = ".github/workflows/parity-gate.yml"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("second-hour")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "first.py").write_text(FIRST)
    (root / "models.py").write_text(MODELS)
    proc = run_cli("init", "--factory", "first:cnn", "--input", "x=2x4", "--yes", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "extra-pip-args" not in (root / WORKFLOW).read_text()
    first = (root / "baselines" / "cnn.msgpack.zst").read_bytes()
    added = run_cli("add", "--factory", "models:mlp", "--input", "x=2x4", "--yes", cwd=root)
    return root, first, added


def test_add_keeps_the_first_model_and_installs_what_the_second_imports(repo):
    repo, first, proc = repo
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ADDED | model mlp, 1 baseline" in proc.stdout
    config = (repo / "parity-gate.toml").read_text()
    assert 'factory = "first:cnn"' in config and 'factory = "models:mlp"' in config
    assert 'extra-pip-args: "torchvision"' in (repo / WORKFLOW).read_text()
    assert any(line.startswith("torchvision==") for line in (repo / "parity-gate-constraints.txt").read_text().split())
    assert (repo / "baselines" / "mlp.msgpack.zst").is_file()
    assert (repo / "baselines" / "cnn.msgpack.zst").read_bytes() == first
    assert run_cli("check", cwd=repo).returncode == 0


def test_init_on_a_configured_repository_adds_rather_than_claims(repo):
    repo = repo[0]
    proc = run_cli("init", "--factory", "models:other", "--input", "x=2x4", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "adding the model to it" in proc.stdout and "ADDED | model other" in proc.stdout
    config = (repo / "parity-gate.toml").read_text()
    assert config.count("[[tool.parity-gate.models]]") + config.count("[[models]]") == 3


def test_a_name_that_is_taken_is_one_line_and_nothing_is_written(repo):
    repo = repo[0]
    before = (repo / "parity-gate.toml").read_text()
    proc = run_cli("add", "--factory", "models:mlp", "--input", "x=2x4", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "a model named `mlp` is configured already; pass --name" in proc.stderr
    assert (repo / "parity-gate.toml").read_text() == before


def test_validate_warns_when_the_workflow_would_not_install_a_models_imports(repo):
    repo = repo[0]
    workflow = repo / WORKFLOW
    text = workflow.read_text()
    workflow.write_text(text.replace('extra-pip-args: "torchvision"', 'extra-pip-args: "numpy"'))
    try:
        proc = run_cli("validate", "--model", "cnn", "--model", "mlp", cwd=repo)  # `other` has no baseline
        assert proc.returncode == 0, proc.stderr
        assert "warning: model `mlp` imports torchvision, which the parity-gate workflow does not install" in \
            proc.stderr
        assert "model `cnn`" not in proc.stderr
    finally:
        workflow.write_text(text)
    assert "warning" not in run_cli("validate", "--model", "cnn", "--model", "mlp", cwd=repo).stderr
