"""Baseline changes that must be approved before they merge.

A pull request that rewrites baselines is judged against its own baselines, so it passes by
construction. With ``baseline-changes: require-approval`` such a pull request fails until a
maintainer allows it: a label on the pull request, or an approving review of the judged commit by
someone with write access (the review must be of that commit: a later push needs a new one).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.github.client import GitHubClient, GitHubError
from gate.render.text import code, plain

POLICIES = ("comment", "require-approval")
DEFAULT_LABEL = "parity-gate:approve-baselines"
WRITERS = ("OWNER", "MEMBER", "COLLABORATOR")


@dataclass(frozen=True)
class Approval:
    state: str  # "approved" | "pending" | "unknown"
    how: str  # for people: by which label or reviewer, or why it could not be checked

    @property
    def blocks(self) -> bool:
        return self.state != "approved"


def check_approval(client: GitHubClient | None, repo: str, number: int, sha: str, label: str) -> Approval:
    """Whether the baseline change of pull request ``number`` at commit ``sha`` is approved."""
    if client is None:
        return Approval("unknown", "no token to read the pull request's labels and reviews")
    try:
        pr = client.get(f"/repos/{repo}/pulls/{number}") or {}
        if label in {str(lab.get("name")) for lab in pr.get("labels") or [] if isinstance(lab, dict)}:
            return Approval("approved", f"label {label}")
        latest: dict[str, dict] = {}
        for review in client.paginate(f"/repos/{repo}/pulls/{number}/reviews"):
            login = str((review.get("user") or {}).get("login") or "")
            if login and review.get("state") in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[login] = review  # a reviewer's latest verdict counts (comments do not change it)
    except GitHubError as e:
        return Approval("unknown", f"could not read the pull request ({e.status or 'no response'} {e.message})")
    for login, review in latest.items():
        if review.get("state") == "APPROVED" and review.get("commit_id") == sha and \
                review.get("author_association") in WRITERS:
            return Approval("approved", f"review by @{login}")
    return Approval("pending", f"no label {label} and no approving review of commit {sha[:12] or '?'}")


def approval_line(approval: Approval | None, label: str) -> str:
    """The line the comment's baseline block carries (Markdown)."""
    if approval is None:
        return ""
    if approval.state == "approved":
        return f"✅ The baseline change is approved ({plain(approval.how, 200)})."
    why = "" if approval.state == "pending" else f" (approval could not be checked: {plain(approval.how, 200)})"
    return (f"🔒 **This check fails until the baseline change is approved**{why}: a maintainer adds the label "
            f"{code(label, 100)} or approves this commit in a review, then the check runs again.")
