"""GitHub side of parity-gate: the REST client (``client``), the pull request as the API tells it
(``event``, ``pull``, ``changes``), the one PR comment (``comment``, ``stamp``), approvals (``approval``),
a report's verdict decided again (``recheck``), commit status, job summary and step outputs (``publish``,
``commit_status``, ``actions``), a sharded run's legs (``legs``), and what the composite action installs
(``install``, ``ortdist``, ``pins``). No typer/rich here; the CLI lives in gate.cli.github_cmds.
"""

from __future__ import annotations

from gate.github.actions import ActionsEnv
from gate.github.approval import POLICIES, Approval, check_approval
from gate.github.client import GitHubClient, GitHubError, RateLimited
from gate.github.comment import (
    WHEN,
    CommentResult,
    comment_id,
    find_comment,
    find_comments,
    marker,
    own_login,
    upsert_comment,
)
from gate.github.event import NoPullRequest, PullRequest, resolve_pull_request
from gate.github.publish import FAIL_ON, Outcome, PublishSettings, publish
from gate.github.stamp import RunStamp, stamp_for

__all__ = [
    "FAIL_ON",
    "POLICIES",
    "Approval",
    "RunStamp",
    "check_approval",
    "own_login",
    "stamp_for",
    "WHEN",
    "ActionsEnv",
    "CommentResult",
    "GitHubClient",
    "GitHubError",
    "NoPullRequest",
    "Outcome",
    "PullRequest",
    "RateLimited",
    "PublishSettings",
    "comment_id",
    "find_comment",
    "find_comments",
    "marker",
    "publish",
    "resolve_pull_request",
    "upsert_comment",
]
