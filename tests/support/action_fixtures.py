"""pytest fixtures shared by the action's e2e tests: a fake GitHub and a runner factory.

A runner's workspace is a git checkout whose commit is the event's pull-request base (the action
fails closed without it), and the action runs with the prepared environment as its venv-path."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.action_runner import ActionRunner
from tests.support.fake_github import FakeGitHub
from tests.support.prepared_venv import ROOT, make_prepared_venv

REPORTS = ROOT / "tests" / "data" / "reports"
EVENTS = ROOT / "tests" / "support" / "events"
REPO, PR = "octo/models", 7
TOKEN = "ghs_secretTestToken0123456789"
LEG = "gate-Linux-X64"  # the default leg of a runner's job `gate` (action.yml: job, OS, architecture)
MARKER = f"<!-- parity-gate:comment id=default@{LEG} -->"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def git_workspace(where: Path) -> str:
    """A checkout with one commit (the base); returns its sha."""
    where.mkdir(parents=True, exist_ok=True)
    git(where, "init", "-q")
    (where / "README.md").write_text("models\n")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "base")
    return git(where, "rev-parse", "HEAD")


@pytest.fixture
def github():
    with FakeGitHub(token=TOKEN) as fake:
        fake.open_pull(REPO, json.loads((EVENTS / "pull_request.json").read_text())["pull_request"])
        yield fake


@pytest.fixture
def make_runner(tmp_path, github):
    venv = make_prepared_venv(tmp_path / "venv")
    workspace = tmp_path / "work"
    base = git_workspace(workspace)

    def make(event: str = "pull_request", **env: str) -> ActionRunner:
        payload = json.loads((EVENTS / f"{event}.json").read_text())
        if "pull_request" in payload:
            payload["pull_request"]["base"]["sha"] = base
        return ActionRunner(
            ROOT, workspace, api_url=github.url, event_name=event, event=payload, repository=REPO,
            env=env, artifacts=tmp_path / "artifacts", inputs={"venv-path": str(venv)},
        )

    return make
