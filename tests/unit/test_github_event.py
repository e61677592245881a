"""gate.github.event: which pull request a run is about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.errors import FormatError
from gate.github.client import GitHubClient
from gate.github.event import NoPullRequest, PullRequest, load_event, resolve_pull_request
from tests.support.fake_github import FakeGitHub

EVENTS = Path(__file__).resolve().parents[1] / "support" / "events"


def event(name: str) -> dict:
    return json.loads((EVENTS / f"{name}.json").read_text())


def test_pull_request_event():
    pr = resolve_pull_request("pull_request", event("pull_request"), "x/y", None)
    assert pr == PullRequest(7, "octo/models", "pull_request event")


def test_pull_request_target_uses_the_same_payload():
    assert resolve_pull_request("pull_request_target", event("pull_request"), "x/y", None).number == 7


def test_workflow_run_with_listed_pull_request():
    ev = event("workflow_run")
    ev["workflow_run"]["pull_requests"] = [{"number": 5, "head": {"sha": ev["workflow_run"]["head_sha"]}}]
    assert resolve_pull_request("workflow_run", ev, "octo/models", None).number == 5


def test_workflow_run_listing_two_pull_requests_is_not_guessed_between():
    ev = event("workflow_run")
    sha = ev["workflow_run"]["head_sha"]
    ev["workflow_run"]["pull_requests"] = [{"number": n, "head": {"sha": sha}} for n in (5, 6)]
    assert resolve_pull_request("workflow_run", ev, "octo/models", None) == NoPullRequest(
        f"open pull requests #5, #6 all have head {sha[:12]}: which one this run is about cannot be told")


def test_workflow_run_by_commit_through_the_api():
    ev = event("workflow_run")
    sha = ev["workflow_run"]["head_sha"]
    with FakeGitHub(token="t") as fake:
        fake.pulls["octo/models"] = [{"number": 9, "state": "open", "head": {"sha": sha, "label": "octo:fuse-stem"}}]
        pr = resolve_pull_request("workflow_run", ev, "octo/models", GitHubClient("t", fake.url))
    assert pr == PullRequest(9, "octo/models", f"pull request of commit {sha[:12]}")


def test_workflow_run_without_a_match_says_so():
    with FakeGitHub(token="t") as fake:
        pr = resolve_pull_request("workflow_run", event("workflow_run"), "octo/models", GitHubClient("t", fake.url))
    assert pr == NoPullRequest("no open pull request has head 5c1d2e3f4a5b")


SHA = "ab" * 20


def pull(number: int, branch: str = "b", base: str = "main", sha: str = SHA) -> dict:
    return {"number": number, "state": "open", "base": {"ref": base},
            "head": {"sha": sha, "ref": branch, "label": f"o:{branch}", "repo": {"full_name": "o/r"}}}


def test_push_has_no_pull_request_unless_given_and_then_only_the_one_at_its_head():
    assert isinstance(resolve_pull_request("push", {}, "o/r", None), NoPullRequest)
    assert resolve_pull_request("push", {}, "o/r", None, explicit=4) == NoPullRequest(
        "cannot verify pull request #4 (no token)")
    with FakeGitHub(token="t") as fake:
        client = GitHubClient("t", fake.url)
        fake.pulls["o/r"] = [pull(4)]
        for name in ("push", "workflow_dispatch"):
            assert resolve_pull_request(name, {}, "o/r", client, explicit=4, sha=SHA).number == 4
        moved = resolve_pull_request("push", {}, "o/r", client, explicit=4, sha="cd" * 20)
        assert "not the run's" in moved.reason
        fake.pulls["o/r"].append(pull(5, base="release"))  # the same branch into a second base
        two = resolve_pull_request("workflow_dispatch", {}, "o/r", client, explicit=4, sha=SHA)
        assert two == NoPullRequest(f"open pull requests #4, #5 all have head {SHA[:12]}: which one this run "
                                    "is about cannot be told")
        fake.pulls["o/r"][1] = pull(5, branch="other")  # another branch at the same commit
        assert "#4, #5" in resolve_pull_request("push", {}, "o/r", client, explicit=5).reason


def test_unreadable_event_is_a_format_error(tmp_path):
    (tmp_path / "e.json").write_text("{")
    with pytest.raises(FormatError, match=r"event payload `.*e.json` \(GITHUB_EVENT_PATH\): not JSON"):
        load_event(str(tmp_path / "e.json"))
