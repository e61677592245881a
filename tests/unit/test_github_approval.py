"""gate.github.approval: a baseline change is approved by the label, or by a writer's approving
review of the judged commit (real HTTP to the fake GitHub)."""

from __future__ import annotations

import pytest

from gate.github import GitHubClient
from gate.github.approval import approval_line, check_approval
from tests.support.fake_github import FakeGitHub

TOKEN = "ghs_unitTestToken"
REPO, PR, SHA, LABEL = "o/r", 3, "ab" * 20, "parity-gate:approve-baselines"


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as f:
        f.pulls[REPO] = [{"number": PR, "state": "open", "labels": [], "head": {"sha": SHA, "label": "o:x"}}]
        yield f


def review(state: str, login: str = "maint", commit: str = SHA, association: str = "MEMBER") -> dict:
    return {"user": {"login": login}, "state": state, "commit_id": commit, "author_association": association}


def check(fake):
    return check_approval(GitHubClient(TOKEN, fake.url), REPO, PR, SHA, LABEL)


def test_the_label_approves(fake):
    fake.pulls[REPO][0]["labels"] = [{"name": "bug"}, {"name": LABEL}]
    assert check(fake).state == "approved" and check(fake).how == f"label {LABEL}"


def test_a_reviewers_latest_verdict_counts_and_comments_do_not_change_it(fake):
    fake.reviews[(REPO, PR)] = [review("APPROVED"), review("COMMENTED")]
    assert check(fake).state == "approved"
    fake.reviews[(REPO, PR)].append(review("CHANGES_REQUESTED"))
    assert check(fake).state == "pending"


def test_an_approval_of_an_earlier_commit_does_not_count(fake):
    fake.reviews[(REPO, PR)] = [review("APPROVED", commit="cd" * 20)]
    approval = check(fake)
    assert approval.blocks and approval.how == f"no label {LABEL} and no approving review of commit {SHA[:12]}"


def test_unreadable_pull_request_blocks_and_says_why(fake):
    fake.inject("GET", rf"/pulls/{PR}$", 403, message="Resource not accessible by integration")
    approval = check(fake)
    assert approval.state == "unknown" and approval.blocks
    assert "could not read the pull request (403 Resource not accessible by integration)" in approval.how
    assert "approval could not be checked" in approval_line(approval, LABEL)
    assert check_approval(None, REPO, PR, SHA, LABEL).state == "unknown"
