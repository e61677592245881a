"""The action's export cache, run step by step with the real gate (this checkout's CLI as venv-path):
a first run exports and saves the cache under the key the baselines record, a second job restores
it and does not export, ``full`` runs the whole path, and a pull_request_target run never saves
(its entries would land in the base branch's scope)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.support.action_runner import ActionRunner
from tests.support.fake_github import FakeGitHub
from tests.support.prepared_venv import make_prepared_venv

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
CONFIG = ('baseline-dir = "b"\nproviders = ["torch-cpu", "CPUExecutionProvider"]\n\n[[models]]\nname = "net"\n'
          'factory = "reuse_models:net"\ninputs = [{ name = "x", shape = [2, 3, 8, 8] }]\n')
PUSH = {"ref": "refs/heads/main", "repository": {"full_name": "octo/models"}}
EXPORTING = "exporting to ONNX"
REUSED = "float64 reference from the baseline (its key unchanged)"


@pytest.fixture
def project(tmp_path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(HERE / "reuse_models.py", work / "reuse_models.py")
    (work / "parity-gate.toml").write_text(CONFIG)
    result = run_cli("update-baseline", cwd=work)
    assert result.returncode == 0, result.stderr
    return work


def job(work: Path, github: FakeGitHub, n: int, event_name: str = "push") -> ActionRunner:
    """One job on a fresh runner temp; the cache service (``cache``) is shared between jobs."""
    return ActionRunner(ROOT, work, api_url=github.url, event_name=event_name, event=PUSH, temp=work.parent / f"temp-{n}",
                        cache=work.parent / "cache", artifacts=work.parent / f"artifacts-{n}",
                        inputs={"venv-path": str(make_prepared_venv(work.parent / "venv", "gate.cli")), "comment": "never", "upload-report": "false"})


def test_a_second_job_restores_the_graph_and_does_not_export(project):
    with FakeGitHub(token="t") as github:
        first = job(project, github, 1).run({"mode": "check"})
        assert first.returncode == 0, first.log
        assert EXPORTING in first.log and first.step("export-cache-save").conclusion == "success"
        key = first.step("export-key").outputs["key"]
        assert key.startswith("parity-gate-export-Linux-X64-") and len(key.rsplit("-", 1)[1]) == 32

        second = job(project, github, 2).run({"mode": "check"})
        assert second.returncode == 0, second.log
        assert second.step("export-cache").outputs["cache-hit"] == "true"
        assert EXPORTING not in second.log and REUSED in second.log
        assert second.step("export-cache-save").conclusion == "skipped"  # the key holds it already

        full = job(project, github, 3).run({"mode": "check", "full": "true"})
        assert full.returncode == 0, full.log
        assert EXPORTING in full.log and full.step("export-key").conclusion == "skipped"


def test_pull_request_target_restores_but_never_saves(project):
    with FakeGitHub(token="t") as github:
        run = job(project, github, 1, event_name="pull_request_target").run({"mode": "check"})
        assert run.step("export-cache").outputs["cache-hit"] == "false"
        assert run.step("export-cache-save").conclusion == "skipped"
        assert not list((project.parent / "cache").glob("*.tar.zst"))


def test_a_bad_input_is_refused_before_anything_runs(project):
    with FakeGitHub(token="t") as github:
        run = job(project, github, 1).run({"mode": "check", "export-cache": "yes"})
        assert run.returncode == 2 and "input export-cache is 'yes'; expected true or false" in run.stdout


def pull_request(number: int) -> dict:
    # No base.sha: this workspace is no git checkout, so there is no base commit to fetch.
    return {"pull_request": {"number": number, "head": {"sha": f"{number}" * 40}, "base": {"ref": "main"}},
            "repository": {"full_name": "octo/models", "default_branch": "main"}}


def pr_job(work: Path, github: FakeGitHub, n: int, number: int) -> ActionRunner:
    runner = job(work, github, n, event_name="pull_request")
    runner.event = pull_request(number)
    runner.event_path.write_text(__import__("json").dumps(runner.event))
    return runner


def test_a_new_pull_requests_first_run_reuses_what_the_default_branch_saved(project):
    """Caches are scoped as GitHub scopes them: a pull request's saves are its own; the default branch's
    are every pull request's. A push to main (what `init`'s workflow runs on merge) primes the cache,
    so a new pull request's first run takes the base's entries; another pull request's never."""
    with FakeGitHub(token="t") as github:
        cold = pr_job(project, github, 1, 1).run({"mode": "check"})  # nothing primed: this pull request exports
        assert cold.returncode == 0, cold.log
        assert EXPORTING in cold.log and cold.step("export-cache").outputs["cache-hit"] == "false"
        assert cold.step("export-cache-save").conclusion == "success"  # into refs/pull/1/merge only

        other = pr_job(project, github, 2, 2).run({"mode": "check"})  # pull request 1's entry is not its own
        assert other.step("export-cache").outputs["cache-hit"] == "false" and EXPORTING in other.log

        primed = job(project, github, 3).run({"mode": "check"})  # a push to main: saved in the default branch
        assert primed.returncode == 0 and primed.step("export-cache-save").conclusion == "success"

        first = pr_job(project, github, 4, 3).run({"mode": "check"})
        assert first.returncode == 0, first.log
        assert first.step("export-cache").outputs["cache-hit"] == "true"
        assert EXPORTING not in first.log and REUSED in first.log
