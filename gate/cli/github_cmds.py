"""`parity-gate comment`: publish a JSON report to the pull request, the job summary and step outputs.

``gate.cli.app`` calls ``register(app)``; the command is a thin shell over ``gate.github.publish``.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from gate.errors import GateError
from gate.github.actions import ActionsEnv, command, log_safe, write_command
from gate.github.approval import DEFAULT_LABEL, POLICIES
from gate.github.changes import Named
from gate.github.comment import WHEN, comment_id
from gate.github.commit_status import DEFAULT_CONTEXT
from gate.github.publish import FAIL_ON, Outcome, PublishSettings, job_status, publish
from gate.render import headline_text
from gate.verdict.report_file import load_report
from gate.verdict.types import Report

When = Enum("When", {w.replace("-", "_"): w for w in WHEN}, type=str)
FailOn = Enum("FailOn", {f: f for f in FAIL_ON}, type=str)
Policy = Enum("Policy", {p.replace("-", "_"): p for p in POLICIES}, type=str)


def comment(
    report: Annotated[str, typer.Option("--report", help="JSON report written by `check --json` or `report --json`.",
                                        envvar="PARITY_GATE_REPORT", show_default=False)],
    markdown: Annotated[str | None, typer.Option("--markdown", help="Also write the comment's Markdown here.",
                                                 envvar="PARITY_GATE_MARKDOWN")] = None,
    when: Annotated[When, typer.Option(
        "--when", envvar="PARITY_GATE_COMMENT",
        help="auto: post when not passing, or update an earlier comment; always; on-change: skip when the "
             "report is unchanged; never: job summary only.")] = When.auto,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", envvar="PARITY_GATE_FAIL_ON",
                                         help="regression: exit 1 on a regression, 3 on a failed model; never: exit 0.")] = FailOn.regression,
    cid: Annotated[str | None, typer.Option("--id", envvar="PARITY_GATE_COMMENT_ID",
                                            help="Comment id, one comment per PR and id (default: the config path).")] = None,
    config: Annotated[str | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                               help="Config path; names the comment when --id is not given, and "
                                                    "a change to it needs approval like the default ones.")] = None,
    constraints: Annotated[str | None, typer.Option("--constraints", envvar="PARITY_GATE_CONSTRAINTS",
                                                    help="Constraints file whose change needs approval, besides "
                                                         "parity-gate-constraints.txt.")] = None,
    pr: Annotated[int | None, typer.Option("--pr", envvar="PARITY_GATE_PR", min=1,
                                           help="Pull request number (default: from the event).")] = None,
    artifact_url: Annotated[str | None, typer.Option("--artifact-url", envvar="PARITY_GATE_ARTIFACT_URL",
                                                     help="Link to the uploaded report artifact.")] = None,
    max_wait: Annotated[float, typer.Option("--max-wait", envvar="PARITY_GATE_GITHUB_MAX_WAIT", min=0,
                                            help="Most seconds to wait on GitHub rate limits.")] = 120.0,
    baseline_changes: Annotated[Policy, typer.Option(
        "--baseline-changes", envvar="PARITY_GATE_BASELINE_CHANGES",
        help="comment: a pull request that changes baselines always gets a comment saying so; require-approval: "
             "it also fails until someone with write access, neither the author nor anyone who pushed to it, "
             "approves this commit in a review or adds the approval label after its last push.")] = Policy.comment,
    approval_label: Annotated[str, typer.Option("--approval-label", envvar="PARITY_GATE_APPROVAL_LABEL",
                                                help="The label that approves a baseline change.")] = DEFAULT_LABEL,
    job: Annotated[str | None, typer.Option("--job", envvar="PARITY_GATE_JOB_LABEL",
                                            help="What the comment names as the job that ran the gate.")] = None,
    status_context: Annotated[str, typer.Option(
        "--status-context", envvar="PARITY_GATE_STATUS_CONTEXT",
        help="The commit status the verdict is posted as on the commit judged, the name a branch protection rule "
             "requires (not with --when never; empty: none).")] = DEFAULT_CONTEXT,
) -> None:
    """Write the PR comment (one per PR and config), the job summary, annotations and step outputs.

    The token comes from GITHUB_TOKEN (or PARITY_GATE_GITHUB_TOKEN), never from the command line.
    """
    try:
        data = load_report(report)
        settings = PublishSettings(
            report_path=report, when=when.value, fail_on=fail_on.value, comment_id=comment_id(cid or config),
            artifact_url=artifact_url or None, pr_number=pr, markdown_path=markdown, max_wait=max_wait,
            baseline_changes=baseline_changes.value, approval_label=approval_label or DEFAULT_LABEL, job=job or None,
            named=Named(config or "", constraints or ""), status_context=status_context)
        env = ActionsEnv.from_environ()
        out = publish(data, settings, env)
    except GateError as e:
        say(f"error: {e}", err=True)
        raise typer.Exit(e.exit_code) from None
    _tell(out, data, env.in_actions, approval_label)
    raise typer.Exit(out.exit_code)


def _tell(out: Outcome, data: Report, in_actions: bool, approval_label: str) -> None:
    """What ``comment`` did, on the log: workflow commands where it runs in Actions, plain lines elsewhere."""
    for line in out.lines:  # workflow commands, their text escaped where they were made
        write_command(line)
    c = out.comment
    if c.action == "skipped" and in_actions:
        write_command(command("notice", f"parity-gate: PR comment not written: {c.reason}"))
    elif c.action == "skipped":
        say(f"parity-gate: PR comment not written: {c.reason}")
    else:
        say(f"parity-gate: PR comment {c.action}{': ' + c.url if c.url else ''}")
    st = out.status
    if st is not None and st.posted:
        say(f"parity-gate: commit status {st.context} set to {st.state} on {st.sha[:12]}")
    elif st is not None and in_actions:
        write_command(command("warning", f"parity-gate: commit status {st.context} not set: {st.reason}"))
    elif st is not None:
        say(f"parity-gate: commit status {st.context} not set: {st.reason}")
    if out.approval is not None and out.approval.blocks:
        say(f"BLOCKED | this pull request changes {', '.join(out.changes.kinds)}; someone with write access approves "
            f"this commit in a review, or adds the label {approval_label} after its last push ({out.approval.how})")
    say(f"{'PASSED' if out.verdict == 'pass' else 'FAILED'} | {headline_text(out.report or data)}")


def say(line: str, err: bool = False) -> None:
    """Every line this command prints holds text from the report or the API: one line each (in Actions the
    writer, ``gate.github.actions.InertLines``, also keeps it from starting a workflow command)."""
    typer.echo(log_safe(line), err=err)


AUTO = When("auto")


class JobState(str, Enum):  # the states of ``publish.JOB_STATES``
    pending = "pending"
    error = "error"


def status(
    state: Annotated[JobState, typer.Argument(
        help="pending: the judging job started; error: it ended without a verdict (failed or cancelled).",
        show_default=False)],
    when: Annotated[When, typer.Option("--when", envvar="PARITY_GATE_COMMENT",
                                       help="As for comment: never posts no status.")] = AUTO,
    pr: Annotated[int | None, typer.Option("--pr", envvar="PARITY_GATE_PR", min=1,
                                           help="Pull request number (default: from the event).")] = None,
    status_context: Annotated[str, typer.Option(
        "--status-context", envvar="PARITY_GATE_STATUS_CONTEXT",
        help="The commit status to set (empty: none).")] = DEFAULT_CONTEXT,
    max_wait: Annotated[float, typer.Option("--max-wait", envvar="PARITY_GATE_GITHUB_MAX_WAIT", min=0,
                                            help="Most seconds to wait on GitHub rate limits.")] = 120.0,
) -> None:
    """Set the verdict's commit status to pending or error on the commit the judging job judges, where
    ``comment`` would post the verdict: no earlier verdict stands while a run judges, or after it died."""
    settings = PublishSettings(report_path="", when=when.value, pr_number=pr, max_wait=max_wait,
                               status_context=status_context)
    try:
        st = job_status(state.value, settings, ActionsEnv.from_environ())
    except GateError as e:
        say(f"error: {e}", err=True)
        raise typer.Exit(e.exit_code) from None
    if st is None:
        say(f"parity-gate: no commit status from this run ({status_context or 'status-context empty'})")
    elif st.posted:
        say(f"parity-gate: commit status {st.context} set to {st.state} on {st.sha[:12]}")
    else:  # as for comment: the job's own check stands
        say(f"parity-gate: commit status {st.context} not set: {st.reason}", err=True)


def register(app: typer.Typer) -> None:
    app.command("comment")(comment)
    app.command("status")(status)
