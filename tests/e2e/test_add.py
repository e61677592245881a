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
    assert "adding the model to it, every other model kept" in proc.stdout
    assert "INITIALIZED | model other" in proc.stdout
    config = (repo / "parity-gate.toml").read_text()
    assert config.count("[[tool.parity-gate.models]]") + config.count("[[models]]") == 3


def test_init_for_another_factory_under_a_taken_name_is_refused_as_add_refuses_it(repo):
    repo = repo[0]
    (repo / "second.py").write_text(FIRST)  # its own `cnn`
    before = (repo / "parity-gate.toml").read_text()
    proc = run_cli("init", "--factory", "second:cnn", "--input", "x=2x4", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "a model named `cnn` is configured already; pass --name" in proc.stderr
    assert (repo / "parity-gate.toml").read_text() == before


def test_init_again_for_a_configured_factory_keeps_it(repo):
    repo = repo[0]
    before = (repo / "parity-gate.toml").read_text()
    proc = run_cli("init", "--factory", "first:cnn", "--input", "x=2x4", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "adding the model" not in proc.stdout and "kept     parity-gate.toml" in proc.stdout
    assert (repo / "parity-gate.toml").read_text() == before


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


TEXT = '''import torch


class Pooled(torch.nn.Module):
    """Token embeddings averaged under the attention mask: a mask of 0..99 is no mask at all."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.out = torch.nn.Linear(8, 2)

    def forward(self, input_ids, attention_mask):
        m = attention_mask.unsqueeze(-1).to(self.emb.weight.dtype)
        return self.out((self.emb(input_ids) * m).sum(1) / m.sum(1).clamp(min=1))


def pooled():
    return Pooled()


def sample(seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 50, (2, 6), generator=g)
    return ids, torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
'''


def test_an_integer_mask_on_the_default_range_is_warned_and_a_given_range_is_written(repo):
    repo = repo[0]
    (repo / "text.py").write_text(TEXT)
    proc = run_cli("add", "--factory", "text:pooled", "--name", "pooled-default", "--input", "input_ids=2x6:int64[0,50)",
                   "--input", "attention_mask=2x6:int64", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert ("warning: model `pooled-default`: integer input `attention_mask` looks like a mask and takes the default "
            "range 0..99, but a mask holds 0 and 1: give its range, `low = 0, high = 2`") in proc.stderr
    assert "input_ids" not in proc.stderr  # its range is given
    proc = run_cli("add", "--factory", "text:pooled", "--name", "pooled-ranged", "--input", "input_ids=2x6:int64[0,50)",
                   "--input", "attention_mask=2x6:int64[0,2)", "--no-baseline", "--yes", cwd=repo)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    assert ('{ name = "attention_mask", shape = [2, 6], dtype = "int64", low = 0, high = 2 }'
            in (repo / "parity-gate.toml").read_text())


def test_add_takes_an_inputs_callable_and_records_the_baseline_on_its_tensors(repo):
    repo = repo[0]
    (repo / "text.py").write_text(TEXT)
    proc = run_cli("add", "--factory", "text:pooled", "--name", "pooled-real", "--inputs", "text:sample", "--yes",
                   cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'inputs = "text:sample"' in (repo / "parity-gate.toml").read_text()
    assert "ADDED | model pooled-real, 1 baseline" in proc.stdout
    both = run_cli("add", "--factory", "text:pooled", "--inputs", "text:sample", "--input", "x=2", "--yes", cwd=repo)
    assert both.returncode == 2 and "give the inputs once" in both.stderr


def test_add_from_a_subfolder_adds_to_the_repositorys_config_and_workflow(repo):
    repo = repo[0]
    (repo / "src").mkdir(exist_ok=True)
    (repo / "vision.py").write_text("import torch\nimport torchvision\n\n\ndef tiny():\n    return torch.nn.Linear(4, 2)\n")
    proc = run_cli("add", "--factory", "vision:tiny", "--input", "x=2x4", "--no-baseline", "--yes", cwd=repo / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'factory = "vision:tiny"' in (repo / "parity-gate.toml").read_text()
    assert not (repo / "src" / "parity-gate.toml").exists()
    assert f"appended {(repo / 'parity-gate.toml').resolve()}" in proc.stdout
