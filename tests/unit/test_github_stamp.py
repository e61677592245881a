"""gate.github.stamp and gate.github.comment.own_login: which run a comment judged, and whose
comments are ours (real HTTP to the fake GitHub)."""

from __future__ import annotations

import pytest

from gate.github.actions import ActionsEnv
from gate.github.client import GitHubClient
from gate.github.comment import ACTIONS_LOGIN, own_login
from gate.github.stamp import RunStamp, is_newer, parse_stamp, stamp_for
from tests.support.fake_github import FakeGitHub

TOKEN = "ghs_unitTestToken"
SHA = "ab" * 20


def env(**kw: str) -> ActionsEnv:
    return ActionsEnv.from_environ({"GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "77", "GITHUB_RUN_ATTEMPT": "2",
                                    "GITHUB_SHA": "cd" * 20, **kw})


def test_a_pull_request_run_judges_the_head_commit_not_the_merge_commit():
    stamp = stamp_for(env(GITHUB_EVENT_NAME="pull_request"), {"pull_request": {"head": {"sha": SHA}}})
    assert stamp == RunStamp(77, 2, SHA, "https://github.com/o/r/actions/runs/77")
    assert stamp_for(env(GITHUB_EVENT_NAME="push"), {}).sha == "cd" * 20


def test_a_workflow_run_judges_the_run_that_computed_the_report():
    event = {"workflow_run": {"id": 9, "run_attempt": 3, "head_sha": SHA, "html_url": "https://h/runs/9"}}
    assert stamp_for(env(GITHUB_EVENT_NAME="workflow_run"), event) == RunStamp(9, 3, SHA, "https://h/runs/9")
    assert stamp_for(env(GITHUB_EVENT_NAME="workflow_run"), {"workflow_run": {}}) is None


def test_a_stamp_survives_the_comment_and_refuses_junk():
    stamp = RunStamp(123, 4, SHA)
    assert parse_stamp(f"<!-- m -->\n{stamp.line()}\nbody") == stamp
    assert parse_stamp("<!-- parity-gate:run id=1 attempt=1 sha=<script> -->") is None
    assert stamp_for(env(GITHUB_EVENT_NAME="pull_request"), {"pull_request": {"head": {"sha": "not a sha"}}}).sha \
        == "cd" * 20


@pytest.mark.parametrize(("there", "ours", "newer"), [
    ((5, 1), (4, 9), True), ((5, 2), (5, 1), True), ((5, 1), (5, 1), False), ((4, 1), (5, 1), False)])
def test_newer_means_a_later_run_or_a_later_attempt(there, ours, newer):
    assert is_newer(RunStamp(*there, SHA), RunStamp(*ours, SHA)) is newer
    assert is_newer(None, RunStamp(*ours, SHA)) is False


def test_an_installation_token_is_named_by_graphql_as_a_bot():
    with FakeGitHub(token=TOKEN, bot="parity-app[bot]") as fake:
        assert own_login(GitHubClient(TOKEN, fake.url), f"{fake.url}/graphql") == "parity-app[bot]"


def test_a_personal_token_is_named_by_the_user_endpoint():
    with FakeGitHub(token=TOKEN, viewer="octocat") as fake:
        assert own_login(GitHubClient(TOKEN, fake.url)) == "octocat"
        assert not fake.calls("POST")


def test_when_nothing_answers_the_login_is_github_actions():
    with FakeGitHub(token=TOKEN) as fake:
        fake.inject("POST", r"^/graphql$", 404)
        assert own_login(GitHubClient(TOKEN, fake.url)) == ACTIONS_LOGIN
