"""Rich rendering of reports and progress for the terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gate import env
from gate.core.progress import TimedProgress
from gate.core.status import (
    AuditStatus,
    CellStatus,
    ModelStatus,
    Role,
    RowStatus,
    SkipKind,
    TargetStatus,
    Verdict,
)
from gate.github.actions import InertLines
from gate.render.data_dependent_md import dependent_rows
from gate.render.markdown import promotion_text
from gate.render.next_steps import TEXT, loosened_lines, step_groups, step_words, unchecked_words
from gate.render.outputs_md import closeness
from gate.render.reuse_text import alarm_line, reuse_line
from gate.render.text import count, over
from gate.verdict.sweeps import Cell, SweepMatrix, matrices
from gate.verdict.types import ModelVerdict, Report

console = Console(highlight=False)
if not console.is_terminal:  # CI logs: wide enough for the report table, never wrapped mid-name
    console = Console(highlight=False, width=160)
err_console = Console(stderr=True, highlight=False)
if not err_console.is_terminal:  # progress and errors in CI logs: one line each, never cut mid-token
    err_console = Console(stderr=True, highlight=False, width=160, soft_wrap=True)
if env.github_actions():  # names and messages from result files: no line starts a command
    console.file, err_console.file = InertLines(sys.stdout), InertLines(sys.stderr)

_STATUS_STYLE = {"pass": "green", "regressed": "bold red", "error": "bold red", "skipped": "yellow",
                 "no-baseline": "yellow"}


@contextmanager
def progress_display(verbose: bool = False) -> Iterator[TimedProgress]:
    """A spinner on a terminal, plain progress lines elsewhere (CI logs): one line per stage, with its
    time, when it ends (``gate.core.progress``); ``verbose`` also prints each stage as it starts."""
    with ExitStack() as stack:
        if console.is_terminal:
            status = stack.enter_context(console.status("starting"))

            def show(line: str) -> None:
                if line.startswith("  "):  # a stage's time or a detail: kept in the scrollback, printed
                    # through the spinner's own console so the spinner is redrawn below it, not left behind
                    console.print(f"[dim]{escape(line)}[/dim]", soft_wrap=True)
                else:
                    status.update(escape(line))
        else:
            def show(line: str) -> None:
                if verbose or line.startswith("  "):  # a stage's end (with its time) or a detail
                    err_console.print(f"[dim]{'' if line.startswith('  ') else '· '}{escape(line)}[/dim]")

        stages = TimedProgress(show)
        try:
            yield stages
        finally:
            stages.finish()


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.3g}"


def _precision(precision: str | None) -> str:
    """A target named with its precision where it is not the default float32 run."""
    if precision == "float64":
        return " (float64 reference)"
    return f" ({precision})" if precision not in (None, "float32") else ""


def render_report(report: Report, gpu_workflow: str = "", verbose: bool = False) -> None:
    """``gpu_workflow``: how this repository records GPU entries on its GPU runner ("" when it has no
    such workflow). A model that passed is a few lines (its providers' table, outputs and notes with
    ``verbose``); one that did not is shown in full."""
    for model in report.models:
        if not model.sweep:
            _render_model(model) if verbose or model.status != ModelStatus.PASS else _render_passed(model)
    for mx in matrices(report.models):
        _render_matrix(mx)
        for model in (m for m in report.models if m.sweep == mx.name and m.status != ModelStatus.PASS):
            _render_model(model)  # what failed, in full; the rest is one row each
    if report.baseline_changes:
        console.print(f"[yellow]this change updates baselines:[/yellow] {escape(', '.join(report.baseline_changes))}")
    if report.baseline_loosened:
        console.print(f"[yellow]this change's baselines loosen limits:[/yellow] "
                      f"{escape(', '.join(report.baseline_loosened))} (a calibrated noise grown, a precision "
                      "coarsened, a recorded latency raised): review them as a change of what passes",
                      soft_wrap=True)
    if report.unchecked:
        console.print(f"[yellow]{escape(unchecked_words(report, TEXT))}[/yellow]", soft_wrap=True)
    for line in loosened_lines(report, TEXT):
        console.print(f"[yellow]{escape(line)}[/yellow]", soft_wrap=True)
    for line in failure_lines(report):
        console.print(line, soft_wrap=True)
    for line in unrecorded_lines(report, gpu_workflow):
        console.print(line, soft_wrap=True)
    console.print(verdict_line(report), soft_wrap=True)


def unrecorded_lines(report: Report, gpu_workflow: str = "") -> list[str]:
    """Baseline entries nothing here can record (a GPU provider on a machine without the GPU): which,
    for which models, and where they are recorded."""
    models: dict[str, list[str]] = {}
    for m in report.models:
        for name in m.unrecorded:
            models.setdefault(name, []).append(m.name)
    out = []
    for name, names in models.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        here = f"`parity-gate update-baseline --provider {name}` on a machine that has it"
        how = f"on the GPU runner, {gpu_workflow} (or {here})" if gpu_workflow else here
        out.append("  [yellow]not recorded yet:[/yellow] " + escape(
            f"{name} ({shown}): no baseline entry, and it cannot run here; record it {how}"))
    return out


def _render_passed(model: ModelVerdict) -> None:
    """A model that passed: its title, what warns about it, and its providers in one line."""
    _render_header(model, brief=True)
    worst = []
    for p in model.providers:
        # a moved row's value is how far a refactor moved it (the note says so), not an error
        values = [r.error for r in p.rows if r.error is not None and r.status != RowStatus.MOVED]
        role = " reference" if p.role == Role.REFERENCE else ""
        worst.append(f"{p.name} {p.precision}{role} " + (_fmt(max(values)) if values else str(p.status)))
    console.print(f"  [green]passed[/green] [dim](worst error)[/dim] {escape(', '.join(worst))}",
                  soft_wrap=True)
    _render_audits(model)
    console.print()


def _render_header(model: ModelVerdict, brief: bool = False) -> None:
    """The model's title line and what is said about it before the providers' table (``brief``: what
    warns, not what informs)."""
    # Names and messages come from the model and the files: never read as markup ("(model)[logits]").
    title = f"[bold]{escape(model.name)}[/bold]  ·  {count(model.layers, 'layer')}  ·  exporter {escape(model.exporter or '—')}"
    if model.export_fallback:
        title += f" (fallback: {escape(model.export_fallback)})"
    console.print(title)
    if model.error:
        console.print(f"  [bold red]{escape(model.error.error_status)}[/bold red]: "
                      f"{escape(model.error.message)}", soft_wrap=True)
        _failure_detail(model.error.where, model.error.trace)
    if model.not_checked:
        judged = ", ".join(f"{p.name} {p.precision}" for p in model.judged)
        console.print(f"  [yellow]not checked:[/yellow] {escape(', '.join(p.name for p in model.not_checked))} "
                      f"(no ONNX graph){escape(f'; checked all the same: {judged}' if judged else '')}", soft_wrap=True)
    if model.message:
        console.print(f"  [yellow]{escape(model.message)}[/yellow]")
    if model.reuse is not None:
        if not brief:
            console.print(f"  [dim]{escape(reuse_line(model.reuse))}[/dim]", soft_wrap=True)
        for alarm in model.reuse.alarms:
            console.print(f"  [bold red]{escape(alarm_line(alarm))}[/bold red]", soft_wrap=True)
    if model.promoted and not brief:
        console.print(f"  [dim]reference: {escape(promotion_text(model))}[/dim]")
    if model.below_float64:
        shown = ", ".join(f"{k} ({v})" for k, v in list(model.below_float64.items())[:5])
        n = len(model.below_float64)
        console.print(f"  [yellow]reference below float64 in {n} layer{'s' * (n != 1)}:[/yellow] {escape(shown)}"
                      " — their limits follow that precision", soft_wrap=True)


def _render_model(model: ModelVerdict) -> None:
    _render_header(model)
    if model.error is not None and not any(p.checked for p in model.providers):
        console.print()  # nothing ran to show in a table: the error above says it all
        return
    table = Table(show_edge=False, pad_edge=False)
    for col in ("provider", "precision", "status", "checked", "failed", "folded", "worst error", "latency",
                "first regression"):
        table.add_column(col, justify="right" if col in ("checked", "failed", "folded", "worst error", "latency")
                         else "left")
    for p in model.providers:
        precision = f"{p.precision} reference" if p.role == Role.REFERENCE else p.precision
        values = [r.error for r in p.rows if r.error is not None]
        first = p.first_regression
        first_text = (f"{first.layer}: {first.check} {over(first.check, first.value, first.threshold, _fmt)}"
                      if first else (p.reason or ""))
        style = _STATUS_STYLE.get(p.status, "")
        table.add_row(escape(p.name), precision, f"[{style}]{p.status}[/{style}]" if style else escape(p.status),
                      str(p.checked), str(p.failed), str(p.folded), _fmt(max(values) if values else None),
                      "—" if p.latency_ms is None else f"{p.latency_ms:.2f} ms", escape(first_text))
    console.print(table)
    for p in model.providers:
        if (p.where or p.trace) and not (model.error and p.where == model.error.where):  # said above already
            console.print(f"  [bold red]{escape(p.name)}[/bold red] {escape(p.error_status or 'failed')}", soft_wrap=True)
            _failure_detail(p.where, p.trace)
    _render_audits(model)
    for p in model.providers:
        for r in (r for r in p.rows if r.exact):
            assert r.exact is not None
            words, failed = closeness(r, lambda v: f"{v:,}" if isinstance(v, int) else f"{v:g}")
            line = escape(f"  output {r.layer} on {p.name}: max-abs {_fmt(r.exact['max_abs'])}, max-rel "
                          f"{_fmt(r.exact['max_rel'])}, allclose: {words}")
            console.print(f"[red]{line}[/red]" if failed else line, soft_wrap=True)
    _render_dependent(model)
    if model.status in (ModelStatus.REGRESSED, ModelStatus.ERROR):
        for h in [h for h in model.hints if h.kind != "hints-unavailable"][:6]:
            where = f" on {h.provider}" if h.provider else ""
            console.print(f"  [cyan]hint[/cyan] {escape(f'{h.kind} at {h.layer or chr(8212)}{where}: {h.message}')}",
                          soft_wrap=True)
    console.print()


def _render_audits(model: ModelVerdict) -> None:
    for a in model.audits + [a for p in model.providers for a in p.audits]:
        style = "red" if a.status == AuditStatus.FAIL else "yellow"
        console.print(f"  [{style}]{escape(a.check)}:[/{style}] {escape(a.message)}", soft_wrap=True)


DEPENDENT_LINES = 8


def _render_dependent(model: ModelVerdict) -> None:
    """One line per runtime row of a data-dependent layer: the rule that judged it and what it found."""
    rows = dependent_rows(model.providers)
    for p, r in rows[:DEPENDENT_LINES]:
        style = "red" if r.failed else "dim"
        how = f"{r.check}: {r.message}" if r.message else f"{r.check} (as any layer)"
        console.print(f"  [{style}]data-dependent {escape(r.layer)} on {escape(p.name)} ({escape(r.status)}), "
                      f"{escape(how)}[/{style}]", soft_wrap=True)
    if len(rows) > DEPENDENT_LINES:
        console.print(f"  [dim]… {len(rows) - DEPENDENT_LINES} more data-dependent rows (the JSON report has them all)[/dim]")


def _failure_detail(where: str | None, trace: str | None) -> None:
    """Where the user's code failed; with --debug, the whole traceback."""
    if where:
        console.print(f"    at {escape(where)}" + ("" if trace else "  (parity-gate --debug shows the traceback)"),
                      soft_wrap=True)
    if trace:
        console.print(f"[dim]{escape(trace)}[/dim]", soft_wrap=True)


_CELL_STYLE = {"ok": "green", "skipped": "yellow", "no-baseline": "yellow", "fallback": "yellow"}


def cell_text(c: Cell) -> str:
    if c.status == CellStatus.SKIPPED:
        return "skipped"
    parts = [c.status] + ([_fmt(c.error)] if c.error is not None else [])
    if c.anchor_error is not None:
        parts.append(f"(anchor {_fmt(c.anchor_error)})")
    if c.latency_ms is not None:
        parts.append(f"{c.latency_ms:.2f}" + (f"/{c.latency_p90_ms:.2f}" if c.latency_p90_ms is not None else "") + " ms")
    return " ".join(parts)


def _render_matrix(mx: SweepMatrix) -> None:
    """Case x provider: status, worst error against the float64 reference, latency median/p90."""
    console.print(f"[bold]sweep {escape(mx.name)}[/bold]  ·  {len(mx.cases)} cases  ·  "
                  f"{len(mx.failing)} not ok  ·  cells: status, worst error, latency median/p90")
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("case")
    for label in mx.providers:
        table.add_column(escape(label))
    for case, cells in mx.cases:
        row = []
        for label in mx.providers:
            c = cells[label]
            style = _CELL_STYLE.get(c.status, "bold red")
            row.append(f"[{style}]{escape(cell_text(c))}[/{style}]")
        table.add_row(escape(case), *row)
    console.print(table)
    reasons = sorted({(label, c.reason) for _, cells in mx.cases for label, c in cells.items()
                      if c.status == CellStatus.SKIPPED and c.reason})
    for label, reason in reasons[:10]:
        console.print(f"  [yellow]skipped[/yellow] {escape(label)}: {escape(reason)}", soft_wrap=True)
    for left, pair in mx.pairs:
        style = {"pass": "green", "fail": "bold red"}.get(pair.status, "yellow")
        console.print(f"  pair {escape(left)} vs {escape(pair.other)} on {escape(pair.provider)}: outputs differ by "
                      f"{_fmt(pair.error)} (tolerance {_fmt(pair.tolerance)}) [{style}]{pair.status}[/{style}]",
                      soft_wrap=True)
    console.print()


def _line(text: str | None, cap: int = 400) -> str:
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first if len(first) <= cap else first[: cap - 1] + "…"


def _at(where: str | None) -> str:
    return f" (at {where})" if where else ""


def why(m: ModelVerdict) -> str:
    """What a model that did not pass failed on, in one line (its next step is said below it)."""
    if m.status == ModelStatus.ERROR:
        if m.error:
            return f"{m.error.error_status}: {_line(m.error.message)}{_at(m.error.where)}"
        p = next((p for p in m.providers if p.status == TargetStatus.ERROR), None)
        return f"{p.name} {p.error_status or 'error'}: {_line(p.reason)}{_at(p.where)}" if p else "error"
    fr = m.first_regression
    if fr:
        return f"{fr.where} on {fr.provider} ({fr.check} {over(fr.check, fr.value, fr.threshold, _fmt)})"
    missing = next((p for p in m.providers if p.status == TargetStatus.NO_BASELINE and p.role == Role.RUNTIME), None)
    if m.baseline_exists and missing is not None:
        return f"no baseline entry for {missing.name} on {missing.label}"
    return "no baseline"


def failure_lines(report: Report) -> list[str]:
    """Above the verdict line: each model that did not pass, when more than one did not, and the next
    step of each (the comment's own words); and that of a model that passed with a refactor inside a module."""
    failed = [m for m in report.models if m.status != ModelStatus.PASS]
    last = {names[-1]: (names, words) for names, words in step_groups(failed, TEXT)}  # after its last model
    out = []
    for m in failed:
        if len(failed) > 1:
            out.append(f"  [red]✗[/red] {escape(m.name)}: {escape(why(m))}")
        if m.name not in last:
            continue
        names, words = last[m.name]
        # the step names its models where the lines above it may be about others
        label = f"next ({escape(', '.join(names[:8]))}{' …' if len(names) > 8 else ''}):" \
            if len(names) > 1 or (len(failed) == 1 and len(report.models) > 1) else "next:"
        out.append(f"{'    ' if len(failed) > 1 else '  '}[bold]{label}[/bold] {escape(words)}")
    for m in (m for m in report.models if m.status == ModelStatus.PASS):  # passed with a refactor inside a module
        words = step_words(m, TEXT)
        if words:
            out.append(f"  [bold]next ({escape(m.name)}):[/bold] {escape(words)}")
    return out


def verdict_line(report: Report) -> str:
    s = report.summary
    assert s is not None  # a Report always has one (__post_init__)
    skipped = sorted({p.name for m in report.models for p in m.providers
                      if p.status == TargetStatus.SKIPPED and p.skip != SkipKind.SWEEP})
    if report.verdict == Verdict.PASS:
        ran = [p for p in s.providers if p not in skipped]
        return "[bold green]PASSED[/bold green] | " + escape(
            f"{count(s.models, 'model')}, {count(s.layers, 'layer')}, providers: {', '.join(ran) or 'none'}"
            + (f" (skipped, not available here: {', '.join(skipped)})" if skipped else ""))
    first = report.first_regression
    if report.verdict == Verdict.ERROR:  # name a model the exit code stands for (2: a refused baseline)
        errors = [m for m in report.models if m.status == ModelStatus.ERROR]
        refused = [m for m in errors if m.refused]
        failed = (refused if report.exit_code == 2 and refused else errors)[0]
        more = f" (and {count(len(errors) - 1, 'more model')})" if len(errors) > 1 else ""
        return f"[bold red]ERROR[/bold red] | {escape(f'{failed.name}{more}: {why(failed)}')}"
    if first:
        return "[bold red]FAILED[/bold red] | " + escape(
            f"first regression: {first.model} {first.where} on {first.provider}{_precision(first.precision)} "
            f"({first.check} {over(first.check, first.value, first.threshold, _fmt)})")
    missing = [m.name for m in report.models if m.status == ModelStatus.NO_BASELINE]
    return f"[bold red]FAILED[/bold red] | missing baseline: {escape(', '.join(missing))}"
