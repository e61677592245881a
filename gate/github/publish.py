"""Publish a report from inside a workflow: job summary, annotations, step outputs, the PR comment.

The comment is best effort: a read-only token (a fork's pull request), a missing PR or an API
failure becomes one line in the log and the summary, never a crash; the exit status follows
only the verdict and ``fail_on``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gate.core.jsonsafe import plain
from gate.errors import FormatError
from gate.github.actions import (
    MAX_ANNOTATIONS,
    ActionsEnv,
    append_summary,
    command,
    write_file,
    write_outputs,
)
from gate.github.client import GitHubClient, GitHubError, RateLimited
from gate.github.comment import CommentResult, digest_line, marker, upsert_comment
from gate.github.event import NoPullRequest, load_event, resolve_pull_request
from gate.render import COMMENT_LIMIT, SUMMARY_LIMIT, Links, headline_text, render_markdown
from gate.render.text import num
from gate.verdict.types import EXIT, Report

FAIL_ON = ("regression", "never")
SHORT_LIMIT = 8_000  # the retry after a 422


@dataclass(frozen=True)
class Settings:
    report_path: str
    when: str = "auto"
    fail_on: str = "regression"
    comment_id: str = "default"
    artifact_url: str | None = None
    pr_number: int | None = None
    markdown_path: str | None = None
    max_wait: float = 120.0


@dataclass
class Outcome:
    verdict: str
    exit_code: int
    comment: CommentResult  # action "skipped" with a one-line reason when no comment was written
    lines: list[str] = field(default_factory=list)  # workflow commands for stdout (annotations)


def publish(
    report: Report,
    settings: Settings,
    env: ActionsEnv,
    make_client: Callable[[ActionsEnv, float], GitHubClient] | None = None,
) -> Outcome:
    make_client = make_client or (lambda e, wait: GitHubClient(e.token, e.api_url, max_wait=wait))
    links = Links(env.run_url, settings.artifact_url)
    verdict = report.verdict
    digest = hashlib.sha256(json.dumps(plain(report.to_dict()), sort_keys=True).encode()).hexdigest()[:16]
    header = f"{marker(settings.comment_id)}\n{digest_line(digest)}"
    body = render_markdown(report, marker=header, links=links, limit=COMMENT_LIMIT)

    summary_written = append_summary(env.summary_path, render_markdown(report, links=links, limit=SUMMARY_LIMIT, summary=True))
    md_path = write_file(settings.markdown_path, body) if settings.markdown_path else ""

    client = make_client(env, settings.max_wait) if env.token else None
    short = lambda: render_markdown(report, marker=header, links=links, limit=SHORT_LIMIT, brief=True)  # noqa: E731
    result = _comment(report, settings, env, client, body, short, digest)
    if result.action == "skipped" and summary_written:
        append_summary(env.summary_path, f"\n> ℹ️ PR comment not written: {result.reason}\n")

    fr = report.first_regression
    write_outputs(
        env.output_path,
        {
            "verdict": verdict,
            "first-model": fr.model or "" if fr else "",
            "first-layer": fr.layer if fr else "",
            "first-provider": fr.provider or "" if fr else "",
            "report-json": str(Path(settings.report_path).resolve()),
            "report-markdown": md_path,
            "comment-id": str(result.id or ""),
            "comment-url": str(result.url or ""),
        },
    )
    exit_code = 0 if settings.fail_on == "never" else EXIT.get(verdict, 1)
    return Outcome(verdict, exit_code, result, annotations(report))


def _comment(
    report: Report, settings: Settings, env: ActionsEnv, client: GitHubClient | None,
    body: str, short: Callable[[], str], digest: str,
) -> CommentResult:
    if settings.when == "never":
        return CommentResult("skipped", reason="commenting is off (comment: never)")
    try:
        event = load_event(env.event_path)
        pr = resolve_pull_request(env.event_name, event, env.repository, client, settings.pr_number)
        if isinstance(pr, NoPullRequest):
            return CommentResult("skipped", reason=pr.reason)
        if client is None:
            return CommentResult("skipped", reason="no token (set the github-token input or GITHUB_TOKEN)")
        def upsert(text: str) -> CommentResult:
            return upsert_comment(
                client, pr.repository, pr.number, text, marker(settings.comment_id),
                when=settings.when, wants_attention=report.verdict != "pass", digest=digest,
            )

        try:
            return upsert(body)
        except GitHubError as e:
            if e.status != 422:
                raise
            # Rejected (its size, counted some other way?): the headline and the pointer always fit.
            return upsert(short())
    except FormatError as e:
        return CommentResult("skipped", reason=str(e))
    except RateLimited as e:
        return CommentResult("skipped", reason=f"rate limited by GitHub: {e}")
    except GitHubError as e:
        return CommentResult("skipped", reason=_explain(e))


def _explain(e: GitHubError) -> str:
    if e.status in (403, 404):
        return (
            f"GitHub answered {e.status} ({e.message or 'forbidden'}) to {e.method} {e.path}: the token cannot write "
            "to this pull request (a pull request from a fork gets a read-only token; see the README's fork-safe "
            "workflow); the report is in the job summary"
        )
    if e.status == 422:
        return f"GitHub rejected the comment (422 {e.message}); the report is in the job summary"
    return f"{e}; the report is in the job summary"


def annotations(report: Report) -> list[str]:
    """``::error::`` lines for the first regression of each model/provider and for failed models."""
    out: list[str] = []
    for m in report.models:
        if m.status == "error":
            e = m.error or {}
            out.append(command("error", str(e.get("message", "")), title=f"parity-gate: {m.name} {e.get('status', 'error')}"))
        elif m.status == "no-baseline":
            out.append(command("error", f"no baseline: run `parity-gate update-baseline --model {m.name}` and commit it",
                               title=f"parity-gate: {m.name} has no baseline"))
        for p in m.providers:
            fr = p.first_regression
            if fr:
                out.append(command(
                    "error",
                    f"{m.name}: layer {fr.layer} on {p.name} failed {fr.check}: "
                    f"{num(fr.value)} > {num(fr.threshold)}. {fr.message or ''}".strip(),
                    title=f"parity-gate: {m.name} regressed on {p.name} ({p.precision or '?'})",
                ))
    first = report.first_regression
    if first is not None:  # the overall first regression leads; stable otherwise
        lead = f"{first.model}: layer {first.layer} on {first.provider} "
        out.sort(key=lambda line: lead not in line)
    return out[:MAX_ANNOTATIONS]


__all__ = ["FAIL_ON", "Outcome", "Settings", "annotations", "headline_text", "publish"]
