"""`parity-gate merge`: the reports of a sharded run's legs as one report (``gate.verdict.merge``), for the
job that judges and comments. ``gate.cli.app`` calls ``register(app)``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gate.config.shards import MAX_SHARDS
from gate.errors import GateError
from gate.github.actions import log_safe


def merge(
    paths: Annotated[list[Path], typer.Argument(
        help="The legs' JSON reports (check --shard K/N --json), or folders of downloaded report artifacts "
             "(<name>-shard-K-of-N-a<attempt>/, each shard's latest attempt counts).", show_default=False)],
    shards: Annotated[int, typer.Option("--shards", envvar="PARITY_GATE_SHARDS", min=1, max=MAX_SHARDS,
                                        help="How many shards the run was cut into: each must have a report.",
                                        show_default=False)],
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the merged JSON report here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write its Markdown here.")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write it as JUnit XML here.")] = None,
) -> None:
    """Merge the legs' reports into one verdict; refuse (exit 2) a model no leg or two legs judged."""
    from gate.cli.console import console, verdict_line
    from gate.cli.shared import _write_reports
    from gate.github.legs import latest
    from gate.github.recheck import recheck
    from gate.verdict.merge import Leg
    from gate.verdict.merge import merge as merge_legs
    from gate.verdict.report_file import load_report

    legs: list[Leg] = []
    try:
        for path in paths:
            legs.extend(latest(path, shards) if path.is_dir() else [Leg(str(path), load_report(path))])
        report = merge_legs(legs, shards)
        found = recheck(report)  # the verdict `comment` gives: a leg's statuses never better than its rows
    except GateError as e:  # a refusal is one inert line and its exit code, wherever the command runs
        typer.echo(log_safe(f"error: {e}"), err=True)
        raise typer.Exit(e.exit_code) from None
    _write_reports(report, json_path, markdown, junit)
    for leg in sorted(legs, key=lambda x: x.run.shard):
        names = ", ".join(m.name for m in leg.report.models[:3]) + (", …" if len(leg.report.models) > 3 else "")
        console.print(f"shard {leg.run.shard}: {len(leg.report.models)} model(s) from `{leg.name}`"
                      + (f" ({names})" if names else ""), markup=False, soft_wrap=True)
    for c in found:
        what = " · ".join(x for x in (c.model, c.provider) if x) or "the verdict"
        console.print(f"judged by its rows: {what} was written {c.claimed}, its evidence says {c.found}",
                      markup=False, soft_wrap=True)
    console.print(verdict_line(report), soft_wrap=True)
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
