"""Baseline changes that must be approved before they merge, by whom and for which commit (docs/action.md).

A pull request that rewrites baselines passes against them by construction, so with ``require-approval``
the exact commit judged must be approved by someone with write access who is neither its author nor
anyone who pushed to its branch: by an approving review of that commit, or by the label added after
that commit's last push (a label on a harmless commit never approves the one pushed after it).

Write access is the repository permission, never ``author_association``, which a read-only organization
member shares with a maintainer. The REST timeline keeps no time of an ordinary push, so the last push
and who pushed come from the repository activity API (GitHub's own times; commit dates and e-mails are
the pusher's to write). Where it cannot be read, or an update shares the label's second, the label does
not count; where it cannot be read back to the branch's creation, no approval counts (fails closed).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any
from urllib.parse import quote

from gate.core.status import ApprovalState, NotCounted
from gate.github.client import GitHubClient, GitHubError
from gate.github.pull import Pull
from gate.render.text import code, plain

POLICIES = ("comment", "require-approval")
DEFAULT_LABEL = "parity-gate:approve-baselines"
WRITE = ("admin", "write")  # the permission endpoint's words for write access and above
MAX_UPDATES = 1000  # branch updates read back before a label's time, or the pushers, are given up on
NO_COMMIT = "0" * 40  # an update's ``before`` where it created the branch
WHY = {
    NotCounted.AUTHOR: "the pull request's author",
    NotCounted.NO_WRITE: "no write access",
    NotCounted.OTHER_COMMIT: "of another commit",
    NotCounted.BEFORE_PUSH: "added before the last push",
    NotCounted.NO_PUSH_TIME: "the branch's pushes cannot be read to tie it to a commit",
    NotCounted.PUSHER: "pushed to the pull request",
}


@dataclass(frozen=True)
class Ignored:
    """A label or review that did not approve the judged commit, and why."""

    kind: str  # "label" | "review"
    login: str
    why: NotCounted


@dataclass(frozen=True)
class Approval:
    state: ApprovalState
    how: str  # for people: by which label or reviewer, or why it could not be checked
    ignored: tuple[Ignored, ...] = field(default=())

    @property
    def blocks(self) -> bool:
        return self.state != ApprovalState.APPROVED


def check_approval(client: GitHubClient | None, pull: Pull, sha: str, label: str) -> Approval:
    """Whether the baseline change of ``pull`` at commit ``sha`` (the commit judged) is approved."""
    if client is None:
        return Approval(ApprovalState.UNKNOWN, "no token to read the pull request's labels and reviews")
    if not sha:
        return Approval(ApprovalState.UNKNOWN, "the commit judged is not known (no head commit in the event)")
    ignored: list[Ignored] = []
    who = _Who(client, pull)
    try:
        by = _review(client, pull, sha, who, ignored)
        if by:
            return Approval(ApprovalState.APPROVED, f"review of commit {sha[:12]} by {by}", tuple(ignored))
        if label in pull.labels:
            by = _label(client, pull, sha, label, who, ignored)
            if by:
                return Approval(ApprovalState.APPROVED, f"label {label} added by {by} after the last push",
                                tuple(ignored))
    except GitHubError as e:
        return Approval(ApprovalState.UNKNOWN, f"could not read the pull request ({e.status or 'no response'} "
                        f"{e.message})", tuple(ignored))
    except PushersUnknown as e:  # fails closed: an approver could be one of them
        return Approval(ApprovalState.UNKNOWN, f"who pushed to it since its base cannot be established: {e}",
                        tuple(ignored))
    return Approval(ApprovalState.PENDING, f"no approving review of commit {sha[:12]} and no label {label} "
                    "added after its last push", tuple(ignored))


def _login(item: dict[str, Any], key: str) -> str:
    who = item.get(key)
    return str(who.get("login") or "") if isinstance(who, dict) else ""


@dataclass(frozen=True)
class _Who:
    """Who may approve the judged commit of ``pull``: the one rule for reviews and labels alike."""

    client: GitHubClient
    pull: Pull
    writers: dict[str, bool] = field(default_factory=dict)  # write access, asked once per login

    @cached_property
    def pushers(self) -> set[str]:
        """Who pushed to the pull request since its base, asked once and only when an approval needs it."""
        return {who.lower() for who in pushers(self.client, self.pull)}

    def writes(self, login: str) -> bool:
        if login not in self.writers:
            try:
                path = f"/repos/{self.pull.repository}/collaborators/{quote(login, safe='')}/permission"
                data = self.client.get(path) or {}
            except GitHubError as e:
                if e.status != 404:  # 404: not a collaborator (or no such user)
                    raise
                data = {}
            self.writers[login] = isinstance(data, dict) and data.get("permission") in WRITE
        return self.writers[login]

    def why_not(self, login: str) -> NotCounted | None:
        if not login:
            return NotCounted.NO_WRITE
        if self.pull.is_author(login):
            return NotCounted.AUTHOR
        if not self.writes(login):
            return NotCounted.NO_WRITE
        return NotCounted.PUSHER if login.lower() in self.pushers else None


def _review(client: GitHubClient, pull: Pull, sha: str, who: _Who, ignored: list[Ignored]) -> str:
    """The login of a writer whose latest verdict approves ``sha``, or ""."""
    latest: dict[str, dict[str, Any]] = {}
    for review in client.paginate(f"/repos/{pull.repository}/pulls/{pull.number}/reviews"):
        login = _login(review, "user") if isinstance(review, dict) else ""
        if login and review.get("state") in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest[login] = review
    for login, review in latest.items():
        if review.get("state") != "APPROVED":
            continue
        why = NotCounted.OTHER_COMMIT if review.get("commit_id") != sha else who.why_not(login)
        if why is None:
            return login
        ignored.append(Ignored("review", login, why))
    return ""


def _label(client: GitHubClient, pull: Pull, sha: str, label: str, who: _Who, ignored: list[Ignored]) -> str:
    """The login of the writer whose adding of ``label`` (the latest) happened while ``sha`` was the head."""
    added = [e for e in client.paginate(f"/repos/{pull.repository}/issues/{pull.number}/events")
             if isinstance(e, dict) and e.get("event") == "labeled"
             and isinstance(e.get("label"), dict) and e["label"].get("name") == label]
    if not added:
        return ""
    event = max(added, key=lambda e: (str(e.get("created_at") or ""), e.get("id") or 0))
    login, at = _login(event, "actor"), _time(event.get("created_at"))
    why = who.why_not(login)
    if why is None:
        head = head_at(client, pull, at) if at else None
        why = NotCounted.NO_PUSH_TIME if head is None else None if head == sha else NotCounted.BEFORE_PUSH
    if why is None:
        return login
    ignored.append(Ignored("label", login, why))
    return ""


def _time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _updates(client: GitHubClient, pull: Pull) -> Iterator[dict[str, Any]]:
    """The head branch's updates, newest first (the activity API of the repository it lives in);
    PushersUnknown where they cannot be read."""
    if not (pull.head_repo and pull.head_ref):
        raise PushersUnknown("the head branch is not known (its repository may be deleted)")
    try:
        yield from client.paginate(f"/repos/{pull.head_repo}/activity", ref=f"refs/heads/{pull.head_ref}",
                                   direction="desc")
    except GitHubError as e:
        if e.status in (403, 404):
            raise PushersUnknown(f"its branch's updates cannot be read ({e.status}: a private fork, or no "
                                 "activity API)") from None
        raise


class PushersUnknown(Exception):
    """Who pushed to the pull request's branch since its base cannot be established (the reason)."""


def pushers(client: GitHubClient, pull: Pull) -> tuple[str, ...]:
    """Everyone who pushed to the pull request's branch since it was made: the actors of its updates (GitHub's
    record), newest first, back to the one that created the branch or set it to the base. Never the commits'
    author or committer, whose e-mail addresses the pusher writes. PushersUnknown where the updates cannot
    be read (a private fork, a deleted head repository) or do not reach back that far."""
    found: list[str] = []
    for i, update in enumerate(_updates(client, pull)):
        if i >= MAX_UPDATES:
            raise PushersUnknown(f"its branch has more than {MAX_UPDATES:,} updates")
        login = _login(update, "actor") if isinstance(update, dict) else ""
        if not login:
            raise PushersUnknown("an update of its branch names no one")
        found.append(login)
        if update.get("before") in (NO_COMMIT, pull.base_sha or NO_COMMIT):
            return tuple(dict.fromkeys(found))
    raise PushersUnknown("its branch's updates do not reach back to where it was made")


def head_at(client: GitHubClient, pull: Pull, at: datetime) -> str | None:
    """The commit the pull request's branch pointed at, at time ``at`` (GitHub's clock): the ``after``
    of its last update before then. None when that cannot be told: the updates cannot be read, none
    is that old, or one falls in the same second (the order within a second is unknown)."""
    try:
        for i, update in enumerate(_updates(client, pull)):
            when = _time(update.get("timestamp")) if isinstance(update, dict) else None
            if when is None or i >= MAX_UPDATES or when == at:
                return None
            if when < at:
                after = update.get("after")
                return after if isinstance(after, str) and after else None
    except PushersUnknown:  # no head branch, a private fork, no activity API: the label cannot be placed
        return None
    return None


def approval_line(approval: Approval | None, label: str, what: str = "baseline change") -> str:
    """The line the comment's baseline block carries (Markdown); when pending, the rule. ``what`` names
    the change ("baseline change", "change to its baselines and config")."""
    if approval is None:
        return ""
    if approval.state == ApprovalState.APPROVED:
        return f"✅ The {what} is approved ({plain(approval.how, 200)})."
    why = ("" if approval.state == ApprovalState.PENDING
           else f" (approval could not be checked: {plain(approval.how, 200)})")
    rule = (f"🔒 **This check fails until the {what} is approved**{why}: someone with write access to "
            f"this repository, other than the pull request's author and whoever pushed to it, approves this "
            f"commit in a review, or adds the label {code(label, 100)} after its last push; then the check runs "
            "again. A label added before a push, a review of an earlier commit, and approvals by the author, by the "
            "pull request's pushers or by someone with triage or read access do not count.")
    seen = list(dict.fromkeys(approval.ignored))[:6]
    if seen:
        rule += " Not counted: " + "; ".join(f"{i.kind} by {code(i.login, 60)} ({WHY[i.why]})" for i in seen) + "."
    return rule
