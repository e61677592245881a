"""The verdict's commit status cannot go stale: the judging job sets it to ``pending`` as it starts
(``parity-gate status pending``), to the verdict when it comments, and to ``error`` when it ends without
one (``parity-gate status error``, the action's step for a failed or cancelled job). Driven through the
fake GitHub: start, approve, withdraw the approval, fail."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.e2e.test_verdict_trust import HEAD, PR, REPO, TOKEN, comment, event, fake, report  # noqa: F401

LABEL = "parity-gate:approve-baselines"


def status(fake, tmp_path, state: str, *args: str):  # noqa: F811
    (tmp_path / "event.json").write_text(json.dumps(event()))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(tmp_path / "event.json"), "GITHUB_API_URL": fake.url,
           "GITHUB_REPOSITORY": REPO, "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1",
           "GITHUB_TOKEN": TOKEN, "PARITY_GATE_GITHUB_TOKEN": "", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc = run_cli("status", state, *args, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return proc


def states(fake) -> list[str]:  # noqa: F811
    return [s["state"] for s in fake.statuses.get((REPO, HEAD), []) if s["context"] == "parity-gate"]


def test_start_approve_withdraw_and_fail_each_leave_the_status_they_should(fake, tmp_path):  # noqa: F811
    fake.roles[(REPO, "maintainer")] = "maintain"
    fake.push(REPO, "fuse-stem", HEAD, "2026-11-02T09:00:00Z", actor="contributor")
    approve = ("--baseline-changes", "require-approval")
    proc = status(fake, tmp_path, "pending")  # start: whatever stood is no longer the verdict
    assert f"commit status parity-gate set to pending on {HEAD[:12]}" in proc.stdout
    assert states(fake) == ["pending"]
    assert comment(fake, tmp_path, report(tmp_path), *approve).returncode == 1  # blocked: not approved yet
    assert states(fake) == ["pending", "failure"]

    fake.label(REPO, PR, LABEL, "maintainer", "2026-11-02T10:00:00Z")  # approve: the labeled event's run
    status(fake, tmp_path, "pending")
    assert comment(fake, tmp_path, report(tmp_path), *approve).returncode == 0
    assert states(fake)[-2:] == ["pending", "success"]

    fake.pulls[REPO][0]["labels"] = []  # withdraw: the unlabeled event's run
    status(fake, tmp_path, "pending")
    assert states(fake)[-1] == "pending"  # the success is gone the moment the run starts
    assert comment(fake, tmp_path, report(tmp_path), *approve).returncode == 1
    assert states(fake)[-2:] == ["pending", "failure"]

    status(fake, tmp_path, "pending")  # fail: the job dies (or is cancelled) before its verdict
    proc = status(fake, tmp_path, "error")
    assert states(fake)[-2:] == ["pending", "error"]
    [last] = fake.statuses[(REPO, HEAD)][-1:]
    assert last["description"].startswith("not judged: the judging job failed or was cancelled")
    assert f"set to error on {HEAD[:12]}" in proc.stdout


def test_no_status_where_the_job_posts_no_verdict(fake, tmp_path):  # noqa: F811
    proc = status(fake, tmp_path, "pending", "--when", "never")
    assert "no commit status from this run" in proc.stdout and fake.statuses == {}
    status(fake, tmp_path, "error", "--status-context", "")
    assert fake.statuses == {}


def test_a_token_that_cannot_set_statuses_is_one_line(fake, tmp_path):  # noqa: F811
    fake.inject("POST", r"/statuses/", 403, message="Resource not accessible by integration")
    proc = status(fake, tmp_path, "pending")
    assert "give the job statuses: write" in proc.stderr and proc.stderr.count("\n") == 1
