"""GitHub side of parity-gate: REST client (stdlib urllib), PR resolution, the pull request as the
API tells it (``pull``: author, head, labels, the files it changes; ``changes``: those that decide its
verdict), the one PR comment and its stamp, approvals tied to the commit and to write access, a
report's verdict decided again from its own rows (``recheck``), job summary, annotations and step
outputs (``actions``: log lines no text can turn into a workflow command), the legs of a sharded run as
their report artifacts arrive (``legs``: each shard's latest attempt); and what the composite action
installs (``install``, ``ortdist``: one ONNX Runtime distribution per environment; ``pins``: the
judging install's constraints, pins only).
No typer/rich here; the CLI lives in gate.cli.github_cmds.
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
