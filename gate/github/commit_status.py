"""The verdict as a commit status on the commit judged, what branch protection can require: a
``workflow_run`` job's own check run belongs to the default branch, never the pull request's head.
``pending`` as the judging job starts and ``error`` when it ends without a verdict, so no earlier verdict
outlives a run; only the job that speaks to the pull request posts it, never over a newer run's result.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.github.client import GitHubClient, GitHubError
from gate.render.text import visible

DEFAULT_CONTEXT = "parity-gate"
STATES = ("pending", "success", "failure", "error")
DESCRIPTION_CAP = 140  # what the statuses API keeps


@dataclass(frozen=True)
class StatusResult:
    posted: bool
    context: str
    state: str
    sha: str
    reason: str = ""  # why it was not posted


def describe(text: str) -> str:
    """A status description: one line of what a reader can see, within the API's limit."""
    s = visible(" ".join(text.split()))
    return s if len(s) <= DESCRIPTION_CAP else s[: DESCRIPTION_CAP - 1] + "…"


def post_status(client: GitHubClient, repo: str, sha: str, context: str, state: str, description: str,
                target_url: str | None) -> StatusResult:
    """Set ``context`` on commit ``sha`` of ``repo`` (a read-only token is refused: one line, never a crash)."""
    assert state in STATES, state
    body = {"state": state, "context": context, "description": describe(description)}
    if target_url:
        body["target_url"] = target_url
    try:
        client.post(f"/repos/{repo}/statuses/{sha}", body)
    except GitHubError as e:
        why = "the token cannot set commit statuses (give the job statuses: write)" if e.status in (403, 404) else ""
        return StatusResult(False, context, state, sha, f"{e.status or 'no response'} {e.message}"
                            + (f": {why}" if why else ""))
    return StatusResult(True, context, state, sha)
