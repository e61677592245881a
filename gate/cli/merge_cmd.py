"""`parity-gate merge`: the reports of a sharded run's legs as one report (``gate.verdict.merge``), for the
job that judges and comments; with ``--baselines``, the shares of a sharded re-recording as one baseline
folder (``gate.commands.baseline_shards``). ``gate.cli.app`` calls ``register(app)``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from gate.cli.shared import ReportPaths, _load, _write_reports, report_options
from gate.config.shards import MAX_SHARDS
from gate.errors import GateError
from gate.github.actions import log_safe


@report_options
def merge(
    paths: Annotated[list[Path], typer.Argument(
        help="The legs' JSON reports (check --shard K/N --json), or folders of downloaded report artifacts "
             "(<name>-shard-K-of-N-a<attempt>/, each shard's latest attempt counts).", show_default=False)],
    shards: Annotated[int, typer.Option("--shards", envvar="PARITY_GATE_SHARDS", min=1, max=MAX_SHARDS,
                                        help="How many shards the run was cut into: each must have a report.",
                                        show_default=False)],
    *, reports: ReportPaths,
    baselines: Annotated[bool, typer.Option(
        "--baselines", help="Merge the shares of a sharded re-recording instead (update-baseline --shard "
        "K/N --out DIR: each a folder, or a folder of <name>-shard-K-of-N-a<attempt> artifacts) and "
        "write their baseline files into the config's baseline-dir.")] = False,
    config: Annotated[Path | None, typer.Option(
        "--config", envvar="PARITY_GATE_CONFIG",
        help="With --baselines: the config whose baseline-dir they go to.")] = None,
) -> None:
    """Merge the legs' reports into one verdict; refuse (exit 2) a model no leg or two legs judged.
    With --baselines, merge the legs' recorded baselines alike."""
    if baselines:
        if any(reports.values()):
            raise GateError("--baselines merges baseline files, not reports: "
                            f"drop {', '.join(f'--{name}' for name, path in reports.items() if path)}")
        into = _load(config).baseline_dir
        try:
            _merge_baselines(paths, shards, into)
        except GateError as e:
            _refuse(e)
        return
    from gate.cli.console import console, verdict_line
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
    except GateError as e:
        _refuse(e)
    _write_reports(report, reports)
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


def _refuse(e: GateError) -> NoReturn:
    """A refusal is one inert line and its exit code, wherever the command runs."""
    typer.echo(log_safe(f"error: {e}"), err=True)
    raise typer.Exit(e.exit_code) from None


def _merge_baselines(paths: list[Path], shards: int, into: Path) -> None:
    from gate.cli.console import console
    from gate.commands.baseline_shards import SHARE, combine, read_share
    from gate.commands.common import display
    from gate.github.legs import latest_folders
    from gate.render.text import count

    folders = [f for p in paths
               for f in ([p] if (p / SHARE).exists() else latest_folders(p, shards, "share").values())]
    written = combine([read_share(f) for f in folders], shards, into)
    for shard in sorted({share.run.shard for share in written.values()}):
        files = [t.name for t, share in written.items() if share.run.shard == shard]
        console.print(f"shard {shard}: {', '.join(files)}", markup=False, soft_wrap=True)
    merged = f"{count(len(written), 'baseline file')} from {count(shards, 'shard')}"
    console.print(f"MERGED | {merged} into {display(into)}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
