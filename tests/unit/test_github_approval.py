"""gate.github.approval: a baseline change is approved only for the exact commit judged, by someone
with write access who is not the pull request's author (real HTTP to the fake GitHub). Each way
around it is a test: a label set before the last push, a self-label, a triage user's label, a
read-only member's review, a review of an older commit."""

from __future__ import annotations

import pytest

from gate.core.status import ApprovalState, NotCounted
from gate.github.approval import Ignored, approval_line, check_approval
from gate.github.client import GitHubClient
from gate.github.pull import fetch_pull
from tests.support.fake_github import FakeGitHub

TOKEN = "ghs_unitTestToken"
REPO, FORK, BRANCH, PR, LABEL = "o/r", "mallory/r", "tweak", 3, "parity-gate:approve-baselines"
A, B = "aa" * 20, "bb" * 20  # a harmless commit, then the one that rewrites the baselines
ROLES = {"maint": "maintain", "admin1": "admin", "writer": "write", "triager": "triage", "reader": "read",
         "mallory": "triage"}


def at(minute: int) -> str:
    return f"2026-11-02T10:{minute:02d}:00Z"


@pytest.fixture
def fake():
    with FakeGitHub(token=TOKEN) as f:
        f.pulls[REPO] = [{"number": PR, "state": "open", "labels": [], "user": {"login": "mallory"},
                          "head": {"sha": A, "ref": BRANCH, "label": f"mallory:{BRANCH}",
                                   "repo": {"full_name": FORK}}}]
        f.roles.update({(REPO, login): role for login, role in ROLES.items()})
        f.push(FORK, BRANCH, A, at(0))
        yield f


def review(login: str, commit: str, state: str = "APPROVED") -> dict:
    # author_association says MEMBER for everyone: it must not matter.
    return {"user": {"login": login}, "state": state, "commit_id": commit, "author_association": "MEMBER"}


def check(fake, sha: str | None = None):
    client = GitHubClient(TOKEN, fake.url)
    pull = fetch_pull(client, REPO, PR)
    return check_approval(client, pull, sha or pull.head_sha, LABEL)


def test_a_label_added_after_the_last_push_approves(fake):
    fake.label(REPO, PR, LABEL, "maint", at(5))
    approval = check(fake)
    assert approval.state == ApprovalState.APPROVED and not approval.blocks
    assert approval.how == f"label {LABEL} added by maint after the last push"


def test_a_label_set_before_the_last_push_does_not_approve_the_pushed_commit(fake):
    fake.label(REPO, PR, LABEL, "maint", at(5))  # on the harmless commit A
    fake.push(FORK, BRANCH, B, at(9), before=A)
    approval = check(fake)
    assert approval.state == ApprovalState.PENDING
    assert approval.ignored == (Ignored("label", "maint", NotCounted.BEFORE_PUSH),)
    assert check(fake, sha=A).state == ApprovalState.APPROVED  # it did approve A, while A was the head


def test_a_label_in_the_same_second_as_a_push_cannot_be_placed(fake):
    fake.push(FORK, BRANCH, B, at(9), before=A)
    fake.label(REPO, PR, LABEL, "maint", at(9))
    assert check(fake).ignored == (Ignored("label", "maint", NotCounted.NO_PUSH_TIME),)


def test_without_the_branchs_pushes_no_approval_counts_and_the_reason_is_said(fake):
    fake.label(REPO, PR, LABEL, "maint", at(5))
    fake.reviews[(REPO, PR)] = [review("writer", A)]
    fake.inject("GET", r"/activity$", 404, times=5)  # a private fork: who pushed cannot be told
    approval = check(fake)
    assert approval.state == ApprovalState.UNKNOWN and approval.blocks
    assert approval.how == ("who pushed to it since its base cannot be established: its branch's updates "
                            "cannot be read (404: a private fork, or no activity API)")


def test_the_authors_own_label_does_not_count(fake):
    fake.label(REPO, PR, LABEL, "mallory", at(5))
    approval = check(fake)
    assert approval.blocks and approval.ignored == (Ignored("label", "mallory", NotCounted.AUTHOR),)


def test_a_triage_users_label_does_not_count(fake):
    fake.label(REPO, PR, LABEL, "triager", at(5))
    assert check(fake).ignored == (Ignored("label", "triager", NotCounted.NO_WRITE),)


def test_the_latest_labeling_decides(fake):
    """Removed and added again by someone else: whoever added it last is who approved."""
    fake.label(REPO, PR, LABEL, "maint", at(5))
    fake.label(REPO, PR, LABEL, "mallory", at(6))
    assert check(fake).ignored == (Ignored("label", "mallory", NotCounted.AUTHOR),)


def test_a_read_only_members_review_does_not_count(fake):
    fake.reviews[(REPO, PR)] = [review("reader", A)]
    approval = check(fake)
    assert approval.blocks and approval.ignored == (Ignored("review", "reader", NotCounted.NO_WRITE),)


def test_a_review_of_an_older_commit_does_not_count(fake):
    fake.reviews[(REPO, PR)] = [review("admin1", A)]
    fake.push(FORK, BRANCH, B, at(9), before=A)
    approval = check(fake)
    assert approval.blocks and approval.ignored == (Ignored("review", "admin1", NotCounted.OTHER_COMMIT),)


@pytest.mark.parametrize("login", ["maint", "admin1", "writer"])
def test_a_writers_review_of_the_judged_commit_approves(fake, login):
    fake.reviews[(REPO, PR)] = [review(login, A)]
    approval = check(fake)
    assert approval.state == ApprovalState.APPROVED and approval.how == f"review of commit {A[:12]} by {login}"


def test_a_reviewers_latest_verdict_counts_and_comments_do_not_change_it(fake):
    fake.reviews[(REPO, PR)] = [review("maint", A), review("maint", A, "COMMENTED")]
    assert check(fake).state == ApprovalState.APPROVED
    fake.reviews[(REPO, PR)].append(review("maint", A, "CHANGES_REQUESTED"))
    assert check(fake).state == ApprovalState.PENDING


def test_unreadable_permissions_block_and_say_why(fake):
    fake.reviews[(REPO, PR)] = [review("maint", A)]
    fake.inject("GET", r"/collaborators/maint/permission$", 403, message="Resource not accessible by integration")
    approval = check(fake)
    assert approval.state == ApprovalState.UNKNOWN and approval.blocks
    assert approval.how == "could not read the pull request (403 Resource not accessible by integration)"
    assert "approval could not be checked" in approval_line(approval, LABEL)


def test_no_token_or_no_commit_cannot_approve(fake):
    pull = fetch_pull(GitHubClient(TOKEN, fake.url), REPO, PR)
    assert check_approval(None, pull, A, LABEL).state == ApprovalState.UNKNOWN
    assert check_approval(GitHubClient(TOKEN, fake.url), pull, "", LABEL).state == ApprovalState.UNKNOWN


def test_the_pending_line_states_the_rule_and_what_did_not_count(fake):
    fake.label(REPO, PR, LABEL, "mallory", at(5))
    fake.reviews[(REPO, PR)] = [review("reader", A)]
    line = approval_line(check(fake), LABEL)
    assert line.startswith("🔒 **This check fails until the baseline change is approved**: someone with write access "
                           "to this repository, other than the pull request's author and whoever pushed to "
                           f"it, approves this commit in a review, or adds the label `{LABEL}` after its last push; then "
                           "the check runs again.")
    assert line.endswith("Not counted: review by `reader` (no write access); label by `mallory` (the pull request's "
                         "author).")
    assert "@" not in line


def test_a_maintainer_who_pushed_to_someone_elses_pull_request_cannot_approve_that_push(fake):
    fake.push(FORK, BRANCH, B, at(9), before=A, actor="maint")  # a maintainer's commit on mallory's branch
    fake.reviews[(REPO, PR)] = [review("maint", B)]
    fake.label(REPO, PR, LABEL, "maint", at(10))
    approval = check(fake)
    assert approval.blocks and approval.ignored == (Ignored("review", "maint", NotCounted.PUSHER),
                                                    Ignored("label", "maint", NotCounted.PUSHER))
    assert "label by `maint` (pushed to the pull request)" in approval_line(approval, LABEL)
    fake.reviews[(REPO, PR)].append(review("writer", B))  # a second person
    assert check(fake).how == f"review of commit {B[:12]} by writer"


def test_every_pusher_since_the_base_is_excluded_not_only_the_heads(fake):
    fake.push(FORK, BRANCH, B, at(9), before=A, actor="maint")  # maint's push, then mallory's on top
    c = "cc" * 20
    fake.push(FORK, BRANCH, c, at(10), before=B, actor="mallory")
    fake.reviews[(REPO, PR)] = [review("maint", c)]
    assert check(fake).ignored == (Ignored("review", "maint", NotCounted.PUSHER),)
    fake.reviews[(REPO, PR)] = [review("writer", c)]
    assert check(fake).state == ApprovalState.APPROVED


def test_the_commits_author_and_committer_e_mails_are_never_trusted(fake):
    fake.inject("GET", r"/activity$", 404, times=5)  # a private fork
    fake.commits[(REPO, A)] = {"author": {"login": "x"}, "committer": {"login": "x"}}  # e-mails the pusher chose
    fake.reviews[(REPO, PR)] = [review("writer", A)]
    assert check(fake).state == ApprovalState.UNKNOWN


def test_updates_that_do_not_reach_the_branchs_creation_fail_closed(fake):
    fake.activity[FORK] = [{**u, "before": "ee" * 20} for u in fake.activity[FORK]]  # no creation listed
    fake.reviews[(REPO, PR)] = [review("writer", A)]
    approval = check(fake)
    assert approval.state == ApprovalState.UNKNOWN and approval.how.endswith(
        "its branch's updates do not reach back to where it was made")

