"""The one PR comment per pull request and config: found by its hidden marker among the comments
written by the token's own user (anyone can paste a marker), created, updated in place or left
alone; never replacing a newer run's result."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gate.github.client import GitHubClient, GitHubError
from gate.github.stamp import RunStamp, is_newer, parse_stamp

WHEN = ("auto", "always", "on-change", "never")
_ID_SAFE = re.compile(r"[^A-Za-z0-9._/+@-]")
# What GITHUB_TOKEN writes as (its REST login) when the token cannot say who it is.
ACTIONS_LOGIN = "github-actions[bot]"


def comment_id(raw: str | None) -> str:
    """A marker-safe id (a config path like `models/vision.toml` stays readable)."""
    raw = (raw or "").strip().removeprefix("./")
    return _ID_SAFE.sub("_", raw).strip("_")[:100] or "default"


def marker(cid: str) -> str:
    return f"<!-- parity-gate:comment id={comment_id(cid)} -->"


def digest_line(digest: str) -> str:
    return f"<!-- parity-gate:digest {digest} -->"


@dataclass(frozen=True)
class CommentResult:
    action: str  # created | updated | unchanged | skipped
    id: int | None = None
    url: str | None = None
    reason: str = ""
    newer: bool = False  # skipped because the comment holds a newer run's result


def own_login(client: GitHubClient, graphql_url: str = "") -> str:
    """The login comments written with this token carry. ``GET /user`` answers for a personal token;
    an installation token (GITHUB_TOKEN, a GitHub App) is refused there, and GraphQL's ``viewer`` names
    the bot (REST spells a bot's login with a ``[bot]`` suffix). When neither answers: GITHUB_TOKEN's."""
    try:
        login = (client.get("/user") or {}).get("login")
        if isinstance(login, str) and login:
            return login
    except GitHubError as e:
        if e.status not in (401, 403, 404):
            raise
    try:
        url = graphql_url or f"{client.api_url}/graphql"
        answer = client.post(url, {"query": "query { viewer { login __typename } }"}) or {}
        viewer = (answer.get("data") or {}).get("viewer") or {}
    except GitHubError:
        return ACTIONS_LOGIN
    login = viewer.get("login")
    if not isinstance(login, str) or not login:
        return ACTIONS_LOGIN
    return f"{login}[bot]" if viewer.get("__typename") == "Bot" and not login.endswith("[bot]") else login


def find_comments(client: GitHubClient, repo: str, number: int, mark: str,
                  author: str) -> list[dict[str, Any]]:
    """``author``'s comments whose body starts with the marker line, oldest first (all pages)."""
    return [c for c in client.paginate(f"/repos/{repo}/issues/{number}/comments")
            if (c.get("body") or "").startswith(mark) and ((c.get("user") or {}).get("login") == author)]


@dataclass(frozen=True)
class CommentTarget:
    """Where the comment goes and who may have written it before."""

    repo: str
    number: int
    mark: str
    author: str


def upsert_comment(client: GitHubClient, target: CommentTarget, body: str, *, when: str, wants_attention: bool,
                   digest: str, stamp: RunStamp | None = None) -> CommentResult:
    """Create, update or leave the comment; ``when`` is auto, always or on-change (see docs/action.md)."""
    existing = next(iter(find_comments(client, target.repo, target.number, target.mark, target.author)), None)
    if existing is None:
        if when == "auto" and not wants_attention:
            return CommentResult("skipped", reason="passed and no earlier comment to update (--when auto)")
        made = client.post(f"/repos/{target.repo}/issues/{target.number}/comments", {"body": body})
        return _settle_race(client, target, body, made, stamp)
    there = parse_stamp(existing.get("body") or "")
    if is_newer(there, stamp):
        return CommentResult("skipped", reason=f"the comment holds a newer result ({there.label()}, commit "
                             f"{there.sha[:12] or '?'}); this {stamp.label()} leaves it", newer=True)
    if when == "on-change" and digest_line(digest) in (existing.get("body") or ""):
        return CommentResult("unchanged", existing.get("id"), existing.get("html_url"),
                             "what a reviewer reads is unchanged (--when on-change)")
    updated = client.patch(f"/repos/{target.repo}/issues/comments/{existing['id']}", {"body": body})
    return CommentResult("updated", updated.get("id", existing["id"]), updated.get("html_url", existing.get("html_url")))


def _settle_race(client: GitHubClient, target: CommentTarget, body: str, made: dict[str, Any],
                 stamp: RunStamp | None) -> CommentResult:
    """Two runs that both found no comment both create one: the later creator folds its comment into
    the oldest (unless that one holds a newer result) and deletes its own, so the pull request keeps one."""
    found = find_comments(client, target.repo, target.number, target.mark, target.author)
    if len(found) < 2 or found[0].get("id") == made.get("id"):
        return CommentResult("created", made.get("id"), made.get("html_url"))
    oldest = found[0]
    client.request("DELETE", f"/repos/{target.repo}/issues/comments/{made['id']}")
    there = parse_stamp(oldest.get("body") or "")
    if is_newer(there, stamp):
        return CommentResult("skipped", reason=f"another run created the comment first with a newer result "
                             f"({there.label()})", newer=True)
    client.patch(f"/repos/{target.repo}/issues/comments/{oldest['id']}", {"body": body})
    return CommentResult("updated", oldest["id"], oldest.get("html_url"), "another run created the comment first")
