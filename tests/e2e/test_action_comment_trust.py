"""The comment as something reviewers can trust, through the composite action and a fake GitHub:
only the token's own comments are found, the judged commit is shown and a late run never replaces
a newer result, on-change compares what a reviewer reads, a baseline change is always said first
(and, when asked, blocks until approved), and the fork-safe flow links to the run that computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import action_fixtures
from tests.support.action_fixtures import MARKER, PR, REPO, REPORTS, TOKEN
from tests.support.fake_github import FakeGitHub

github = action_fixtures.github  # fixtures
make_runner = action_fixtures.make_runner
HEAD = "2a9b4d8e1f0c3b5a7d6e9f8a0b1c2d3e4f5a6b7c"  # tests/support/events/pull_request.json


def comment_mode(report: str, **inputs: str) -> dict[str, str]:
    return {"mode": "comment", "report-json": str(REPORTS / f"{report}.json"), **inputs}


def with_changes(tmp_path, name: str = "pass", changes=("baselines/tiny-cnn.msgpack.zst",)) -> dict[str, str]:
    """A fixture report that lists baseline files changed by the pull request (what decides is the
    pull request's file list on the fake GitHub: ``changing``)."""
    doc = json.loads((REPORTS / f"{name}.json").read_text())
    doc["baseline_changes"] = list(changes)
    path = tmp_path / f"{name}-changes.json"
    path.write_text(json.dumps(doc))
    return {"mode": "comment", "report-json": str(path)}


def changing(github, *files: str) -> None:
    """The event's pull request changes ``files`` (as GET /pulls/7/files lists them)."""
    github.files[(REPO, PR)] = [{"filename": f, "status": "modified"} for f in files]
    for pr in github.pulls[REPO]:
        pr["changed_files"] = len(files) if pr["number"] == PR else pr.get("changed_files", 0)


def test_a_planted_marker_in_someone_elses_comment_is_ignored(make_runner, github):
    planted = github.add_comment(REPO, PR, MARKER + "\n✅ all good, merge it", user="mallory")
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    assert run.returncode == 1, run.log
    first, ours = github.issue_comments(REPO, PR)
    assert first["id"] == planted["id"] and first["body"].endswith("merge it")  # untouched
    assert ours["user"]["login"] == "github-actions[bot]" and "regressed at layer `conv2`" in ours["body"]
    assert not github.calls("PATCH")


def test_a_personal_token_finds_its_users_comments(make_runner, github, tmp_path):
    with FakeGitHub(token=TOKEN, viewer="octocat") as fake:
        fake.pulls[REPO] = github.pulls[REPO]
        runner = action_fixtures_runner(make_runner, fake)
        runner.run(comment_mode("regressed"), token=TOKEN)
        runner.run(comment_mode("pass"), token=TOKEN)
        [c] = fake.issue_comments(REPO, PR)
        assert c["user"]["login"] == "octocat" and "✅ parity-gate: passed" in c["body"]
        assert len(fake.calls("PATCH")) == 1


def action_fixtures_runner(make_runner, fake: FakeGitHub):
    runner = make_runner()
    runner.api_url = fake.url
    return runner


def test_the_comment_shows_the_judged_commit_and_run(make_runner, github):
    run = make_runner().run(comment_mode("regressed"), token=TOKEN)
    [c] = github.issue_comments(REPO, PR)
    assert f"<!-- parity-gate:run id=4242 attempt=1 sha={HEAD} -->" in c["body"]
    assert (f"<sub>Judged: commit [`{HEAD[:12]}`](https://github.example/octo/models/commit/{HEAD}) · "
            "[run 4242](https://github.example/octo/models/actions/runs/4242)") in c["body"]
    assert run.returncode == 1


def test_a_late_run_never_replaces_a_newer_result(make_runner, github):
    newer = make_runner()
    newer.run_id = "5000"
    assert newer.run(comment_mode("regressed"), token=TOKEN).returncode == 1
    late = make_runner()  # run 4242: created before run 5000, finishing after it
    run = late.run(comment_mode("pass"), token=TOKEN)
    [c] = github.issue_comments(REPO, PR)
    assert "regressed at layer `conv2`" in c["body"] and not github.calls("PATCH")
    assert "PR comment not written: the comment holds a newer result (run 5000, commit 2a9b4d8e1f0c)" in run.stdout
    rerun = make_runner()
    rerun.run_id, rerun.run_attempt = "5000", "2"
    assert rerun.run(comment_mode("pass"), token=TOKEN).returncode == 0
    [c] = github.issue_comments(REPO, PR)
    assert "✅ parity-gate: passed" in c["body"] and "attempt=2" in c["body"]


def test_on_change_ignores_latency_and_links(make_runner, github, tmp_path):
    doc = json.loads((REPORTS / "regressed.json").read_text())
    for p in doc["models"][0]["providers"]:
        p["latency_ms"] = (p["latency_ms"] or 1.0) * 1.37
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(doc))
    first = make_runner()
    first.run(comment_mode("regressed", comment="on-change"), token=TOKEN)
    later = make_runner()
    later.run_id = "4300"
    run = later.run({"mode": "comment", "report-json": str(slower), "comment": "on-change"}, token=TOKEN)
    assert not github.calls("PATCH")
    assert "PR comment unchanged" in run.stdout


def test_a_passing_pull_request_that_changes_baselines_gets_a_comment_that_says_so_first(make_runner, github,
                                                                                           tmp_path):
    changing(github, "baselines/tiny-cnn.msgpack.zst", "models.py")
    run = make_runner().run(with_changes(tmp_path), token=TOKEN)
    assert run.returncode == 0, run.log
    [c] = github.issue_comments(REPO, PR)
    body = c["body"].split("\n\n", 1)[1]
    assert body.startswith("> [!IMPORTANT]\n> **This pull request changes baselines:** `tiny-cnn`")
    assert run.outputs["baseline-changes"] == "tiny-cnn" and run.outputs["baselines-approved"] == ""


def test_a_report_that_calls_a_changed_baseline_deleted_is_not_believed(make_runner, github, tmp_path):
    """A report (from a fork) claiming that the changed file is the deleted baseline of a model the config
    dropped: what the pull request does to files is the API's to say, so the comment still says it changes
    the baseline."""
    changing(github, "baselines/tiny-cnn.msgpack.zst")
    inputs = with_changes(tmp_path)
    doc = json.loads(Path(inputs["report-json"]).read_text())
    doc["baseline_dropped"] = ["baselines/tiny-cnn.msgpack.zst"]
    Path(inputs["report-json"]).write_text(json.dumps(doc))
    run = make_runner().run(inputs, token=TOKEN)
    assert run.returncode == 0, run.log
    [c] = github.issue_comments(REPO, PR)
    assert "> **This pull request changes baselines:** `tiny-cnn`" in c["body"]
    assert "deletes the baseline" not in c["body"]


def open_pull(github) -> None:
    """The pull request of tests/support/events/pull_request.json, its head pushed before anyone approves."""
    github.pulls[REPO] = [{"number": PR, "state": "open", "labels": [], "user": {"login": "contributor"},
                           "head": {"sha": HEAD, "ref": "fuse-stem", "label": "octo:fuse-stem",
                                    "repo": {"full_name": REPO}}}]
    github.push(REPO, "fuse-stem", HEAD, "2026-11-02T10:00:00Z")
    github.roles[(REPO, "maintainer")] = "maintain"
    changing(github, "baselines/tiny-cnn.msgpack.zst")


def test_required_approval_fails_until_the_label_is_set(make_runner, github, tmp_path):
    open_pull(github)
    inputs = {**with_changes(tmp_path), "baseline-changes": "require-approval"}
    blocked = make_runner().run(inputs, token=TOKEN)
    assert blocked.returncode == 1
    assert "::error title=parity-gate%3A baseline change needs approval::" in blocked.stdout
    assert "BLOCKED | this pull request changes baselines" in blocked.stdout
    assert "🔒 **This check fails until the baseline change is approved**" in github.issue_comments(REPO, PR)[0]["body"]
    assert blocked.outputs["baselines-approved"] == "false"
    github.label(REPO, PR, "parity-gate:approve-baselines", "maintainer", "2026-11-02T10:05:00Z")
    allowed = make_runner().run(inputs, token=TOKEN)
    assert allowed.returncode == 0, allowed.log
    assert ("✅ The baseline change is approved (label parity-gate:approve-baselines added by maintainer after the "
            "last push).") in github.issue_comments(REPO, PR)[0]["body"]
    assert allowed.outputs["baselines-approved"] == "true"


@pytest.mark.parametrize(("role", "commit", "approved"), [
    ("maintain", HEAD, True), ("read", HEAD, False), ("admin", "0" * 40, False)])
def test_an_approving_review_counts_from_a_writer_on_the_judged_commit(make_runner, github, tmp_path,
                                                                      role, commit, approved):
    open_pull(github)
    github.roles[(REPO, "maintainer")] = role
    github.reviews[(REPO, PR)] = [{"user": {"login": "maintainer"}, "state": "APPROVED", "commit_id": commit,
                                   "author_association": "MEMBER"}]
    run = make_runner().run({**with_changes(tmp_path), "baseline-changes": "require-approval"}, token=TOKEN)
    assert run.returncode == (0 if approved else 1), run.log
    assert run.outputs["baselines-approved"] == str(approved).lower()


def test_the_fork_flow_links_to_the_run_that_computed_the_report(make_runner, github):
    sha = "5c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d"  # tests/support/events/workflow_run.json
    github.pulls[REPO] = [{"number": 12, "state": "open", "head": {"sha": sha, "label": "contributor:fuse-stem"}}]
    run = make_runner("workflow_run").run(comment_mode("regressed", **{"pr-number": "12"}), token=TOKEN)
    assert run.returncode == 1, run.log
    [c] = github.issue_comments(REPO, 12)
    assert "[run 9100000001](https://github.com/octo/models/actions/runs/9100000001)" in c["body"]
    assert f"commit [`{sha[:12]}`]" in c["body"] and f"sha={sha}" in c["body"]
    assert "actions/runs/4242" not in c["body"]  # the comment run is not the computing run
