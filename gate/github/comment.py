"""One comment per pull request and config: found by a hidden marker, updated in place.

The marker's first line is ``<!-- parity-gate:comment id=<id> -->``; a second hidden line
carries a digest of the report so ``--when on-change`` can leave an unchanged comment alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gate.github.client import GitHubClient

WHEN = ("auto", "always", "on-change", "never")
_ID_SAFE = re.compile(r"[^A-Za-z0-9._/+-]")


def comment_id(raw: str | None) -> str:
    """A marker-safe id (a config path like `models/vision.toml` stays readable)."""
    raw = (raw or "").strip()
    raw = raw[2:] if raw.startswith("./") else raw
    cleaned = _ID_SAFE.sub("_", raw).strip("_")
    return cleaned[:100] or "default"


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


def find_comments(client: GitHubClient, repo: str, number: int, mark: str) -> list[dict]:
    """Comments whose body starts with the marker line, oldest first (all pages are searched)."""
    return [c for c in client.paginate(f"/repos/{repo}/issues/{number}/comments") if (c.get("body") or "").startswith(mark)]


def find_comment(client: GitHubClient, repo: str, number: int, mark: str) -> dict | None:
    found = find_comments(client, repo, number, mark)
    return found[0] if found else None


def upsert_comment(
    client: GitHubClient, repo: str, number: int, body: str, mark: str, *, when: str, wants_attention: bool, digest: str
) -> CommentResult:
    """Create, update or leave the comment; ``when`` is auto, always or on-change (see the README)."""
    existing = find_comment(client, repo, number, mark)
    if existing is None:
        if when == "auto" and not wants_attention:
            return CommentResult("skipped", reason="passed and no earlier comment to update (--when auto)")
        made = client.post(f"/repos/{repo}/issues/{number}/comments", {"body": body})
        return _settle_race(client, repo, number, mark, body, made)
    if when == "on-change" and digest_line(digest) in (existing.get("body") or ""):
        return CommentResult("unchanged", existing.get("id"), existing.get("html_url"), "report unchanged (--when on-change)")
    updated = client.patch(f"/repos/{repo}/issues/comments/{existing['id']}", {"body": body})
    return CommentResult("updated", updated.get("id", existing["id"]), updated.get("html_url", existing.get("html_url")))


def _settle_race(client: GitHubClient, repo: str, number: int, mark: str, body: str, made: dict) -> CommentResult:
    """Two runs that both found no comment both create one: the later creator folds its comment into
    the oldest and deletes its own, so the pull request keeps one."""
    found = find_comments(client, repo, number, mark)
    if len(found) < 2 or found[0].get("id") == made.get("id"):
        return CommentResult("created", made.get("id"), made.get("html_url"))
    oldest = found[0]
    client.patch(f"/repos/{repo}/issues/comments/{oldest['id']}", {"body": body})
    client.request("DELETE", f"/repos/{repo}/issues/comments/{made['id']}")
    return CommentResult("updated", oldest["id"], oldest.get("html_url"), "another run created the comment first")
