"""The verdict as a commit status on the commit judged: what a branch protection rule can require, in
every flow. A job's own check run belongs to the commit of its event: a ``workflow_run`` job's (the
fork flow's judge) to the default branch's, so the pull request's head never shows it; a status is
posted to the head commit by whichever job judged it.

The judging job posts ``pending`` as it starts and ``error`` when it ends without a verdict (failed or
cancelled: ``parity-gate status``), so no earlier verdict outlives a run. Only a job that speaks to the
pull request posts it (``comment`` other than ``never``: the judging
job, never the one that ran the pull request's code), and never over a newer run's result: a run whose
comment a newer run already holds leaves the status to that run.
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
