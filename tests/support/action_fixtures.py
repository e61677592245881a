"""pytest fixtures shared by the action's e2e tests: a fake GitHub and a runner factory."""

from __future__ import annotations

import json

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


@pytest.fixture
def github():
    with FakeGitHub(token=TOKEN) as fake:
        fake.open_pull(REPO, json.loads((EVENTS / "pull_request.json").read_text())["pull_request"])
        yield fake


@pytest.fixture
def make_runner(tmp_path, github):
    venv = make_prepared_venv(tmp_path / "venv")
    workspace = tmp_path / "work"
    workspace.mkdir()

    def make(event: str = "pull_request", **env: str) -> ActionRunner:
        payload = json.loads((EVENTS / f"{event}.json").read_text())
        return ActionRunner(
            ROOT, workspace, api_url=github.url, event_name=event, event=payload, repository=REPO,
            env={"PARITY_GATE_TEST_VENV": str(venv), **env}, artifacts=tmp_path / "artifacts",
        )

    return make
