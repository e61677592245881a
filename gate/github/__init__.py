"""GitHub side of parity-gate: the REST client (``client``), the pull request as the API tells it
(``event``, ``pull``, ``changes``), the one PR comment (``comment``, ``stamp``), approvals (``approval``),
a report's verdict decided again (``recheck``), commit status, job summary and step outputs (``publish``,
``commit_status``, ``actions``), a sharded run's legs (``legs``), and what the composite action installs
(``install``, ``ortdist``, ``pins``). No typer/rich here; the CLI lives in gate.cli.github_cmds.
"""

from __future__ import annotations

from gate.github.actions import ActionsEnv
from gate.github.approval import POLICIES
from gate.github.client import GitHubClient, GitHubError, RateLimited
from gate.github.comment import WHEN, comment_id
from gate.github.event import NoPullRequest, PullRequest, resolve_pull_request
from gate.github.publish import FAIL_ON, PublishSettings, publish

__all__ = ["FAIL_ON", "POLICIES", "WHEN", "ActionsEnv", "GitHubClient", "GitHubError", "NoPullRequest",
           "PublishSettings", "PullRequest", "RateLimited", "comment_id", "publish", "resolve_pull_request"]
