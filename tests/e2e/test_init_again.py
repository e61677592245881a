"""Nothing is lost by re-running a command: a repository gated with two models (`init`, then `add`, each
with its own requirements, and a pin of the user's), then `init --force --require-approval` for the first
model: both models, their requirements, the pins and both baselines stay; approval is on. A model dropped
from the config by hand leaves a baseline nothing checks: `validate` and `check` name it. Real CLI, real
files, real git."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import run_cli

MODELS = ("import torch\n\n\ndef a():\n"
          "    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())\n\n\n"
          "def b():\n    return torch.nn.Embedding(50, 4)\n")
JUDGE = ".github/workflows/parity-gate-comment.yml"  # the single flow judges from the default branch
WORKFLOW = ".github/workflows/parity-gate.yml"
PINS = "parity-gate-constraints.txt"


def cli(root, *args: str) -> subprocess.CompletedProcess:
    proc = run_cli(*args, cwd=root, env={"CI": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("gated")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "models.py").write_text(MODELS)
    cli(root, "init", "--factory", "models:a", "--input", "x=2x4", "--pip-args", "timm", "--yes")
    added = cli(root, "add", "--factory", "models:b", "--input", "ids=2x8:int64[0,50)", "--pip-args",
                "open_clip_torch", "--yes")
    with (root / PINS).open("a") as f:
        f.write("open_clip_torch==2.24.0  # the user's own pin\n")
    return root, added


def test_add_says_what_it_changed_in_each_file(repo):
    _, added = repo
    assert 'edited   .github/workflows/parity-gate.yml  (extra-pip-args: "timm open_clip_torch")' \
        in added.stdout
    assert "appended parity-gate.toml  (model `b`)" in added.stdout
    assert "replaced" not in added.stdout


def test_init_force_require_approval_keeps_every_model_requirement_pin_and_baseline(repo):
    root, _ = repo
    config = (root / "parity-gate.toml").read_text()
    pins = (root / PINS).read_text()
    baselines = {p.name: p.read_bytes() for p in (root / "baselines").iterdir()}
    again = cli(root, "init", "--factory", "models:a", "--input", "x=2x4", "--force", "--require-approval",
                "--yes")
    assert (root / "parity-gate.toml").read_text() == config
    assert (root / PINS).read_text() == pins
    assert {p.name: p.read_bytes() for p in (root / "baselines").iterdir()} == baselines
    workflow = (root / WORKFLOW).read_text()
    assert 'extra-pip-args: "timm open_clip_torch"' in workflow
    assert "labeled, unlabeled" in workflow  # a label runs the check again; the judge enforces approval
    assert "baseline-changes: require-approval" in (root / JUDGE).read_text()
    assert "kept the baselines of 2 models" in again.stdout
    checked = cli(root, "check")
    assert "PASSED | 2 models" in checked.stdout and "no model in" not in checked.stderr


def test_approval_turns_on_in_place_without_force(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "models.py").write_text(MODELS)
    cli(tmp_path, "init", "--factory", "models:a", "--input", "x=2x4", "--no-baseline", "--yes")
    workflow = tmp_path / WORKFLOW
    workflow.write_text(workflow.read_text() + "# the user's own line\n")
    turned = cli(tmp_path, "init", "--factory", "models:a", "--input", "x=2x4", "--require-approval",
                 "--no-baseline", "--yes")
    text = workflow.read_text()
    assert "labeled, unlabeled" in text and text.endswith("# the user's own line\n")
    assert "baseline-changes: require-approval" in (tmp_path / JUDGE).read_text()
    assert f"edited   {JUDGE}  (baseline changes need approval" in turned.stdout


def test_validate_and_check_name_baselines_no_model_owns(repo):
    root, _ = repo
    config = root / "parity-gate.toml"
    text = config.read_text()
    start = text.index('[[tool.parity-gate.models]]\nname = "b"')
    config.write_text(text[:start].rstrip("\n") + "\n")
    expected = ("warning: baselines/b.msgpack.zst: no model in parity-gate.toml owns this baseline, so "
                "nothing checks it")
    for command in ("validate", "check"):
        proc = cli(root, command)
        assert expected in " ".join(proc.stderr.split()), proc.stderr
    # `b` run as a case (batch-sizes added): its table is there, and the warning says what to do
    block = text[start:].split("\n\n")[0]
    shape = block.split("shape = [", 1)[1].split(",", 1)[0]
    config.write_text(text.replace(block, f"{block}\nbatch-sizes = [{shape}]"))
    said = " ".join(run_cli("validate", cwd=root, env={"CI": ""}).stderr.split())  # 1: b.b2 unrecorded
    assert f"b.msgpack.zst: nothing checks this baseline: `b` runs as `b.b{shape}` now" in said, said
    assert "owns this baseline" not in said
    config.write_text(text)
