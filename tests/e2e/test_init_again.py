"""Nothing is lost by re-running a command: a repository gated with two models (`init`, then `add`, each
with its own requirements, and a pin of the user's), then `init --force --require-approval` for the first
model: both models, their requirements, the pins and both baselines stay; approval is on. A model dropped
from the config by hand leaves a baseline nothing checks: `validate` and `check` name it. Real CLI, real
files, real git."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT, run_cli

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


def test_a_factory_that_does_not_import_is_refused_before_anything_is_written(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "mypkg" / "models.py").write_text(MODELS)
    proc = run_cli("init", "--factory", "mypkg.models:a", "--input", "x=2x4", "--yes", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("error: `--factory`: cannot import `mypkg.models` (ModuleNotFoundError: "
                                   "No module named 'mypkg')")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", "src"]
    assert "parity-gate" not in (tmp_path / ".git" / "config").read_text()


def test_add_refuses_a_factory_that_does_not_import_before_anything_is_written(repo):
    root, _ = repo
    before = {p: p.read_bytes() for p in (root / "parity-gate.toml", root / WORKFLOW, root / PINS)}
    proc = run_cli("add", "--factory", "missing.models:c", "--input", "x=2x4", "--yes", cwd=root)
    assert proc.returncode == 2 and "`--factory`: cannot import `missing.models`" in proc.stderr, proc.stderr
    assert all(p.read_bytes() == data for p, data in before.items())


def test_a_factory_the_environment_imports_is_set_up(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "mypkg" / "models.py").write_text(MODELS)
    proc = run_cli("init", "--factory", "mypkg.models:a", "--input", "x=2x4", "--yes", cwd=tmp_path,
                   env={"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path / 'src'}"})  # as `pip install -e .`
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "INITIALIZED | 1 baseline recorded" in proc.stdout


def test_init_run_again_lists_every_file_it_owns_that_is_not_committed(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "models.py").write_text("import torch\n\n\ndef a():\n    return torch.nn.Linear(5, 2)\n")
    failed = run_cli("init", "--factory", "models:a", "--input", "x=2x4", "--yes", cwd=tmp_path)
    assert failed.returncode == 3, failed.stdout + failed.stderr  # the files are written, the model fails
    (tmp_path / "models.py").write_text(MODELS)
    again = cli(tmp_path, "init", "--factory", "models:a", "--input", "x=2x4", "--yes")
    files = again.stdout.split("commit them: git add ", 1)[1].split(" && ", 1)[0].split()
    assert files == [".gitattributes", ".github/CODEOWNERS", JUDGE, WORKFLOW, "baselines", PINS,
                     "parity-gate.toml"]
    subprocess.run(["git", "add", *files], cwd=tmp_path, check=True)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert [line for line in status.splitlines() if not line.startswith("A  ")] == ["?? models.py"], status
