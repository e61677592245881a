"""Publish a report from inside a workflow: job summary, annotations, step outputs, the PR comment.

The report is judged here, never taken on trust (a fork's run may have written it): the baseline files
it changes are the API's list for the commit judged, and where they cannot be listed the run fails
(exit 2). The comment is best effort: an API failure is one line in the log, never a crash.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from gate.core.status import ApprovalState, ChangeKind, ModelStatus, Verdict
from gate.errors import FormatError
from gate.github.actions import (
    MAX_ANNOTATIONS,
    ActionsEnv,
    append_summary,
    command,
    write_file,
    write_outputs,
)
from gate.github.approval import DEFAULT_LABEL, Approval, approval_line, check_approval
from gate.github.changes import GateChanges, Named, changes_line, gate_changes
from gate.github.client import GitHubClient, GitHubError, RateLimited
from gate.github.comment import CommentResult, CommentTarget, digest_line, marker, own_login, upsert_comment
from gate.github.commit_status import DEFAULT_CONTEXT, StatusResult, post_status
from gate.github.event import PR_EVENTS, NoPullRequest, PullRequest, load_event, resolve_pull_request
from gate.github.pull import ChangesUnknown, Pull, fetch_pull
from gate.github.recheck import caution, recheck
from gate.github.stamp import RunStamp, stamp_for
from gate.render import COMMENT_LIMIT, SUMMARY_LIMIT, Links, headline_text, render_markdown
from gate.render.notices import changed_models
from gate.render.text import over, plain
from gate.verdict.types import Report

FAIL_ON = ("regression", "never")
SHORT_LIMIT = 8_000  # the retry after a 422


@dataclass(frozen=True)
class PublishSettings:
    report_path: str
    when: str = "auto"
    fail_on: str = "regression"
    comment_id: str = "default"
    artifact_url: str | None = None
    pr_number: int | None = None
    markdown_path: str | None = None
    max_wait: float = 120.0
    baseline_changes: str = "comment"  # or "require-approval"
    approval_label: str = DEFAULT_LABEL
    job: str | None = None  # what the comment says ran it ("check on Linux X64")
    named: Named = Named()  # the config and constraints files the workflow names (their changes need approval)
    status_context: str = DEFAULT_CONTEXT  # the commit status the verdict is posted as ("": none)


@dataclass
class Outcome:
    verdict: str
    exit_code: int
    comment: CommentResult  # action "skipped" with a one-line reason when no comment was written
    lines: list[str] = field(default_factory=list)  # workflow commands for stdout (annotations)
    approval: Approval | None = None
    report: Report | None = None  # the report as judged (baseline changes from the API)
    changes: GateChanges = GateChanges()  # what the pull request changes that decides its verdict
    status: StatusResult | None = None  # the commit status posted, or not (None: this run posts none)


@dataclass
class _Context:
    """What one publish works with: the event, the run it judges, the pull request (found lazily)."""

    env: ActionsEnv
    settings: PublishSettings
    client: GitHubClient | None
    event: dict[str, Any]
    stamp: RunStamp | None
    event_error: str = ""

    @cached_property
    def pull_request(self) -> PullRequest | NoPullRequest:
        return _resolve(self)

    @cached_property
    def pull(self) -> Pull | NoPullRequest:
        return _fetch(self)


def publish(report: Report, settings: PublishSettings, env: ActionsEnv,
            make_client: Callable[[ActionsEnv, float], GitHubClient] | None = None) -> Outcome:
    ctx = _context(settings, env, make_client)
    report = copy.deepcopy(report)  # judged here: what the API says replaces what the report claims
    try:
        changes = _gate_changes(report, ctx)
    except ChangesUnknown as e:
        _status(ctx, "error", f"not judged: {e}")  # fails closed on the commit too, not only in the log
        raise
    approval = _approval(changes, ctx)
    # What every rendering says besides the report: the approval, what else decides the verdict, and
    # what the report claimed too well.
    said = {"approval": approval_line(approval, settings.approval_label, changes.what()),
            "changes": changes_line(changes), "caution": caution(recheck(report))}
    links = _links(ctx)
    digest = reviewer_digest(report, **said)
    header = "\n".join([marker(settings.comment_id), digest_line(digest)] + ([ctx.stamp.line()] if ctx.stamp else []))
    body = render_markdown(report, marker=header, links=links, limit=COMMENT_LIMIT, **said)

    summary_written = append_summary(env.summary_path, render_markdown(
        report, links=links, limit=SUMMARY_LIMIT, summary=True, **said))
    md_path = write_file(settings.markdown_path, body) if settings.markdown_path else ""

    def short() -> str:
        return render_markdown(report, marker=header, links=links, limit=SHORT_LIMIT, brief=True, **said)

    result = _comment(report, ctx, body, short, digest, bool(changes.files))
    if result.action == "skipped" and summary_written:
        append_summary(env.summary_path, f"\n> ℹ️ PR comment not written: {plain(result.reason)}\n")
    write_outputs(env.output_path, _outputs(report, settings, md_path, result, approval, changes))
    blocked = approval is not None and approval.blocks
    exit_code = 0 if settings.fail_on == "never" else report.exit_code or int(blocked)
    state = ("error" if report.verdict == Verdict.ERROR
             else "failure" if report.verdict != Verdict.PASS or blocked else "success")
    said_first = f"{changes.what()} needs approval · " if blocked else ""
    status = _status(ctx, state, f"{said_first}{report.verdict}: {headline_text(report)}", result)
    write_outputs(env.output_path, {"status": status.state if status is not None and status.posted else ""})
    return Outcome(report.verdict, exit_code, result, _approval_annotation(report, approval, settings, changes)
                   + annotations(report), approval, report, changes, status)


JOB_STATES = {"pending": "judging this commit: no verdict yet",
              "error": "not judged: the judging job failed or was cancelled before its verdict (see the run)"}


def job_status(state: str, settings: PublishSettings, env: ActionsEnv) -> StatusResult | None:
    """``pending`` or ``error`` (``gate.github.commit_status``); None where this run posts none."""
    return _status(_context(settings, env, None), state, JOB_STATES[state])


def _context(settings: PublishSettings, env: ActionsEnv,
             make_client: Callable[[ActionsEnv, float], GitHubClient] | None) -> _Context:
    make_client = make_client or (lambda e, wait: GitHubClient(e.token, e.api_url, max_wait=wait))
    client = make_client(env, settings.max_wait) if env.token else None
    try:
        event, error = load_event(env.event_path), ""
    except FormatError as e:
        event, error = {}, str(e)
    return _Context(env, settings, client, event, stamp_for(env, event), error)


def _resolve(ctx: _Context) -> PullRequest | NoPullRequest:
    if ctx.event_error:
        return NoPullRequest(ctx.event_error)
    try:
        return resolve_pull_request(ctx.env.event_name, ctx.event, ctx.env.repository, ctx.client,
                                    ctx.settings.pr_number, ctx.env.sha)
    except RateLimited as e:
        return NoPullRequest(f"rate limited by GitHub: {e}")
    except GitHubError as e:
        return NoPullRequest(_explain(e))


def _fetch(ctx: _Context) -> Pull | NoPullRequest:
    pr = ctx.pull_request
    if isinstance(pr, NoPullRequest):
        return pr
    if ctx.client is None:
        return NoPullRequest("no token to read the pull request (set the github-token input or GITHUB_TOKEN)")
    try:
        return fetch_pull(ctx.client, pr.repository, pr.number)
    except GitHubError as e:
        return NoPullRequest(f"could not read pull request #{pr.number} ({e.status or 'no response'} {e.message})")


def _links(ctx: _Context) -> Links:
    """Links to the run that computed the report (in the fork-safe flow: the pull_request run)."""
    stamp, env = ctx.stamp, ctx.env
    if stamp is None:
        return Links(env.run_url, ctx.settings.artifact_url, job=ctx.settings.job)
    repo = (ctx.event.get("repository") or {}).get("full_name") or env.repository
    commit_url = f"{env.server_url.rstrip('/')}/{repo}/commit/{stamp.sha}" if stamp.sha and repo else None
    return Links(stamp.url or env.run_url, ctx.settings.artifact_url, stamp.sha or None, commit_url, stamp.label(),
                 ctx.settings.job)


def _status(ctx: _Context, state: str, description: str, comment: CommentResult | None = None) -> StatusResult | None:
    """The verdict on the commit judged, from the job that speaks to the pull request (docs/action.md: the
    status to require), unless a newer run's result holds the comment."""
    s, sha = ctx.settings, ctx.stamp.sha if ctx.stamp else ""
    if not (s.status_context and s.when != "never" and sha and ctx.client and _about_a_pull_request(ctx)):
        return None
    if comment is not None and comment.newer:
        return None
    repo = (ctx.event.get("repository") or {}).get("full_name") or ctx.env.repository
    return post_status(ctx.client, repo, sha, s.status_context, state, description,
                       (comment.url if comment else None) or ctx.env.run_url)


def _about_a_pull_request(ctx: _Context) -> bool:
    run_event = (ctx.event.get("workflow_run") or {}).get("event") if ctx.env.event_name == "workflow_run" else None
    return bool(ctx.settings.pr_number) or ctx.env.event_name in PR_EVENTS or run_event in PR_EVENTS


def _gate_changes(report: Report, ctx: _Context) -> GateChanges:
    """What the pull request changes that decides its verdict (baselines, config, constraints, workflows), as
    the API lists its files for the commit judged; never as the report says (it may come from a fork).
    Fails closed: ChangesUnknown (exit 2) when they cannot be listed. A run that writes no comment and
    needs no approval decides nothing: its report's own baseline list (``--changed-since``) stands."""
    s = ctx.settings
    if (s.when == "never" and s.baseline_changes != "require-approval") or not _about_a_pull_request(ctx):
        return GateChanges.of_baselines(report.baseline_changes)
    pull = ctx.pull
    if isinstance(pull, NoPullRequest):
        raise ChangesUnknown(f"the baseline files this pull request changes cannot be listed: {pull.reason}")
    judged = ctx.stamp.sha if ctx.stamp else ""
    if judged and pull.head_sha and judged != pull.head_sha:
        raise ChangesUnknown(f"pull request #{pull.number} is now at commit {pull.head_sha[:12]}, and this run judged "
                             f"{judged[:12]}: the files it lists are another commit's; the run for "
                             f"{pull.head_sha[:12]} decides")
    assert ctx.client is not None  # a Pull was read with it
    changes = gate_changes(ctx.client, pull, s.named)
    # what the pull request does to files is the API's to say: a report's claim that one is deleted is not
    report.baseline_changes, report.baseline_dropped = changes.baselines, None
    return changes


def _approval(changes: GateChanges, ctx: _Context) -> Approval | None:
    if not changes.files or ctx.settings.baseline_changes != "require-approval":
        return None
    pull = ctx.pull
    if isinstance(pull, NoPullRequest):
        return Approval(ApprovalState.UNKNOWN, pull.reason)
    return check_approval(ctx.client, pull, ctx.stamp.sha if ctx.stamp else "", ctx.settings.approval_label)


def reviewer_digest(report: Report, approval: str = "", changes: str = "", caution: str = "") -> str:
    """A digest of what a reviewer reads: the comment as rendered, without links, latencies and
    peak memory, which change on every run. ``on-change`` compares it."""
    quiet = copy.deepcopy(report)
    for m in quiet.models:
        for p in m.providers:
            p.latency_ms = p.baseline_latency_ms = p.capture_peak_mb = None
            for a in p.audits:
                if a.check == "latency":
                    a.message = f"{p.name}: latency {a.status}"
    text = render_markdown(quiet, approval=approval, changes=changes, caution=caution)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _comment(report: Report, ctx: _Context, body: str, short: Callable[[], str], digest: str,
             changes: bool) -> CommentResult:
    settings = ctx.settings
    if settings.when == "never":
        return CommentResult("skipped", reason="commenting is off (comment: never)")
    pr = ctx.pull_request
    if isinstance(pr, NoPullRequest):
        return CommentResult("skipped", reason=pr.reason)
    if ctx.client is None:
        return CommentResult("skipped", reason="no token (set the github-token input or GITHUB_TOKEN)")
    client = ctx.client
    wants = report.verdict != Verdict.PASS or changes  # a change to what judges it is always said
    try:
        target = CommentTarget(pr.repository, pr.number, marker(settings.comment_id), own_login(client, ctx.env.graphql_url))

        def upsert(text: str) -> CommentResult:
            return upsert_comment(client, target, text, when=settings.when, wants_attention=wants, digest=digest,
                                  stamp=ctx.stamp)

        try:
            return upsert(body)
        except GitHubError as e:
            if e.status != 422:
                raise
            # Rejected (its size, counted some other way?): the headline and the pointer always fit.
            return upsert(short())
    except RateLimited as e:
        return CommentResult("skipped", reason=f"rate limited by GitHub: {e}")
    except GitHubError as e:
        return CommentResult("skipped", reason=_explain(e))


def _outputs(report: Report, settings: PublishSettings, md_path: str, result: CommentResult,
             approval: Approval | None, changes: GateChanges) -> dict[str, str]:
    fr = report.first_regression
    return {
        "verdict": report.verdict,
        "first-model": fr.model or "" if fr else "",
        "first-layer": fr.layer if fr else "",
        "first-provider": fr.provider or "" if fr else "",
        "report-json": str(Path(settings.report_path).resolve()),
        "report-markdown": md_path,
        "comment-id": str(result.id or ""),
        "comment-url": str(result.url or ""),
        "baseline-changes": " ".join(model for model, _ in changed_models(report)),
        "changes": " ".join(changes.kinds),
        "baselines-approved": "" if approval is None else str(not approval.blocks).lower(),
    }


def _approval_annotation(report: Report, approval: Approval | None, settings: PublishSettings,
                         changes: GateChanges) -> list[str]:
    if approval is None or not approval.blocks:
        return []
    models = ", ".join(model for model, _ in changed_models(report)[:10])
    said = [f"the baselines of {models}"] if models else []
    said += [f"its {kind} ({', '.join(f.path for f in changes.of(kind)[:5])})" for kind in changes.kinds
             if kind != ChangeKind.BASELINES]
    return [command("error", f"this pull request changes {'; '.join(said)}: it fails until someone with write "
                    "access, other than its author and those who pushed to it, approves this commit in a review "
                    f"or adds the label `{settings.approval_label}` after its last push ({approval.how})",
                    title=f"parity-gate: {changes.what()} needs approval")]


def _explain(e: GitHubError) -> str:
    if e.status in (403, 404):
        return (f"GitHub answered {e.status} ({e.message or 'forbidden'}) to {e.method} {e.path}: the token cannot "
                "write to this pull request (a pull request from a fork gets a read-only token; see the fork-safe "
                "flow in docs/action.md); the report is in the job summary")
    if e.status == 422:
        return f"GitHub rejected the comment (422 {e.message}); the report is in the job summary"
    return f"{e}; the report is in the job summary"


def annotations(report: Report) -> list[str]:
    """``::error::`` lines for the first regression of each model/provider and for failed models."""
    out: list[str] = []
    for m in report.models:
        if m.status == ModelStatus.ERROR:
            what = m.error.error_status if m.error else "error"
            at = f" (at {m.error.where})" if m.error and m.error.where else ""
            out.append(command("error", (m.error.message if m.error else "") + at, title=f"parity-gate: {m.name} {what}"))
        elif m.status == ModelStatus.NO_BASELINE:
            out.append(command("error", f"no baseline: run `{m.recreate}` and commit it",
                               title=f"parity-gate: {m.name} has no baseline"))
        for p in m.providers:
            fr = p.first_regression
            if fr:
                out.append(command("error", f"{m.name}: layer {fr.layer} on {p.name} failed {fr.check}: "
                                   f"{over(fr.check, fr.value, fr.threshold)}. {fr.message or ''}".strip(),
                                   title=f"parity-gate: {m.name} regressed on {p.name} ({p.precision or '?'})"))
    first = report.first_regression
    if first is not None:  # the overall first regression leads; stable otherwise
        lead = f"{first.model}: layer {first.layer} on {first.provider} "
        out.sort(key=lambda line: lead not in line)
    return out[:MAX_ANNOTATIONS]

