"""Rich rendering of reports and progress for the terminal."""

from __future__ import annotations

from contextlib import contextmanager

from rich.console import Console
from rich.table import Table

from gate.verdict.types import ModelVerdict, Report

console = Console(highlight=False)
if not console.is_terminal:  # CI logs: wide enough for the report table, never wrapped mid-name
    console = Console(highlight=False, width=160)
err_console = Console(stderr=True, highlight=False)

_STATUS_STYLE = {"pass": "green", "regressed": "bold red", "error": "bold red", "skipped": "yellow",
                 "no-baseline": "yellow"}


@contextmanager
def progress_display():
    """A spinner on a terminal, plain progress lines elsewhere (CI logs)."""
    if console.is_terminal:
        with console.status("starting") as status:
            yield lambda msg: status.update(msg)
    else:
        yield lambda msg: err_console.print(f"[dim]· {msg}[/dim]")


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3g}"


def render_report(report: Report) -> None:
    for model in report.models:
        _render_model(model)
    if report.baseline_changes:
        console.print(f"[yellow]this change updates baselines:[/yellow] {', '.join(report.baseline_changes)}")
    console.print(verdict_line(report), soft_wrap=True)


def _render_model(model: ModelVerdict) -> None:
    title = f"[bold]{model.name}[/bold]  ·  {model.layers} layers  ·  exporter {model.exporter or '—'}"
    if model.export_fallback:
        title += f" (fallback: {model.export_fallback})"
    console.print(title)
    if model.error:
        console.print(f"  [bold red]{model.error['status']}[/bold red]: {model.error['message']}")
    if model.message:
        console.print(f"  [yellow]{model.message}[/yellow]")
    table = Table(show_edge=False, pad_edge=False)
    for col in ("provider", "precision", "status", "checked", "failed", "folded", "worst error", "latency",
                "first regression"):
        table.add_column(col, justify="right" if col in ("checked", "failed", "folded", "worst error", "latency")
                         else "left")
    for p in model.providers:
        precision = f"{p.precision} reference" if p.role == "reference" else p.precision
        values = [r.value for r in p.rows if r.value is not None and r.check != "structure"]
        first = p.first_regression
        first_text = (f"{first.layer}: {first.check} {_fmt(first.value)} > {_fmt(first.threshold)}"
                      if first else (p.reason or ""))
        style = _STATUS_STYLE.get(p.status, "")
        table.add_row(p.name, precision, f"[{style}]{p.status}[/{style}]" if style else p.status,
                      str(p.checked), str(p.failed), str(p.folded), _fmt(max(values) if values else None),
                      "—" if p.latency_ms is None else f"{p.latency_ms:.2f} ms", first_text)
    console.print(table)
    for p in model.providers:
        for a in p.audits:
            style = "red" if a.status == "fail" else "yellow"
            console.print(f"  [{style}]{a.check}:[/{style}] {a.message}", soft_wrap=True)
    if model.status in ("regressed", "error"):
        for h in [h for h in model.hints if h.kind != "hints-unavailable"][:6]:
            where = f" on {h.provider}" if h.provider else ""
            console.print(f"  [cyan]hint[/cyan] {h.kind} at {h.layer or '—'}{where}: {h.message}", soft_wrap=True)
    console.print()


def verdict_line(report: Report) -> str:
    s = report.summary
    skipped = sorted({p.name for m in report.models for p in m.providers if p.status == "skipped"})
    if report.verdict == "pass":
        ran = [p for p in s.providers if p not in skipped]
        return f"[bold green]PASSED[/bold green] | {s.models} models, {s.layers} layers, providers: " \
               f"{', '.join(ran) or 'none'}" + (f" (skipped, not available here: {', '.join(skipped)})" if skipped else "")
    first = report.first_regression
    if report.verdict == "error":
        failed = [m for m in report.models if m.status == "error"]
        err = failed[0].error if failed else None
        what = f"{err['status']}: {err['message']}" if err else "error"
        return f"[bold red]ERROR[/bold red] | {what}"
    if first:
        return (f"[bold red]FAILED[/bold red] | first regression: {first.model} {first.layer} on "
                f"{first.provider}{' (float64 reference)' if first.precision == 'float64' else ''} "
                f"({first.check} {_fmt(first.value)} > {_fmt(first.threshold)})")
    missing = [m.name for m in report.models if m.status == "no-baseline"]
    return f"[bold red]FAILED[/bold red] | missing baseline: {', '.join(missing)}"
