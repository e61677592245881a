"""``parity-gate``: each command is a few lines that call the library and render the result."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

import gate
from gate import env
from gate.cli import cache_cmd, extras, github_cmds, init_cmd, merge_cmd, notices, show_cmd
from gate.cli.shared import (
    ReportPaths,
    _base,
    _load,
    _shard_line,
    _sharded,
    _split,
    _write_reports,
    raise_failed,
    report_options,
    show_updated,
)
from gate.errors import INTERNAL_ERROR, GateError
from gate.render.text import count

# Plain help (click's layout): rich markup would eat "[tool.parity-gate]" and show flags as "<bool>".
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="A CI gate for PyTorch models that ship through ONNX.")

ConfigOpt = Annotated[Path | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                                 help="Config file (default: ./pyproject.toml with [tool.parity-gate], else ./parity-gate.toml).")]
ModelOpt = Annotated[list[str] | None, typer.Option("--model", "-m", envvar="PARITY_GATE_MODELS", metavar="NAME",
                                                     help="Model to run (repeatable; default: all).")]
ProviderOpt = Annotated[list[str] | None, typer.Option("--provider", "-p", envvar="PARITY_GATE_PROVIDERS", metavar="NAME",
                                                        help="Provider to run (repeatable; default: the configured ones).")]
GpuOpt = Annotated[bool, typer.Option("--allow-missing-gpu", envvar="PARITY_GATE_ALLOW_MISSING_GPU",
                                       help="Pass when every configured GPU provider is unavailable here "
                                       "(default: such a run fails, exit 3; config key allow-missing-gpu).")]
RequireOpt = Annotated[list[str] | None, typer.Option(
    "--require", envvar="PARITY_GATE_REQUIRE", metavar="NAME",
    help="A provider that must have a result (repeatable, or comma/space separated; adds to the config's "
         "`require`): one that did not run, or whose matrix leg uploaded nothing, fails the report.")]
ShardOpt = Annotated[str | None, typer.Option(
    "--shard", envvar="PARITY_GATE_SHARD", metavar="K/N",
    help="Only shard K of N of the selected models (a leg of a CI matrix): each configured model with all its "
         "cases, each sweep with all its cases, in one shard, balanced by the seconds their baselines record.")]
SinceOpt = Annotated[str | None, typer.Option("--changed-since", envvar="PARITY_GATE_CHANGED_SINCE",
                                               help="A git revision (the PR's base): list the baseline files "
                                               "changed since it in the report (exit 2 when git cannot tell).")]

VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", envvar="PARITY_GATE_VERBOSE",
    help="Print everything: each stage as it starts, and the providers' table, outputs and notes of models "
         "that passed (default: a few lines each).")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"parity-gate {gate.__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")] = False,
    debug: Annotated[bool, typer.Option("--debug", envvar="PARITY_GATE_DEBUG",
                                        help="Print the whole traceback of a model that failed to build, export or run "
                                        "(and of any error), not only the line of your code it failed at.")] = False,
) -> None:
    if debug:
        os.environ[env.DEBUG] = "1"  # workers inherit it: their tracebacks travel in their results


@app.command()
@report_options
def check(config: ConfigOpt = None, model: ModelOpt = None, provider: ProviderOpt = None, *, reports: ReportPaths,
          changed_since: SinceOpt = None, allow_missing_gpu: GpuOpt = False, require: RequireOpt = None,
          full: Annotated[bool, typer.Option("--full", envvar="PARITY_GATE_FULL",
                                             help="Run the whole path: the float64 reference and the export even "
                                             "when the model's content key matches its baseline's.")] = False,
          shard: ShardOpt = None, verbose: VerboseOpt = False) -> None:
    """Run the models on the local providers, compare with the baselines, exit with the verdict."""
    from gate import commands
    from gate.cli.console import err_console, progress_display, render_report

    cfg = _load(config, allow_missing_gpu, require)
    models, chosen = _sharded(cfg, cfg.select_models(_split(model)), shard)
    providers = cfg.select_providers(_split(provider))
    extras.require("check")
    if chosen is not None:
        err_console.print(escape(_shard_line(chosen)), soft_wrap=True)
    notices.backend()
    notices.install_gaps(cfg)
    notices.orphans(cfg)
    notices.input_ranges(models)
    changes = commands.baseline_changes(cfg, changed_since) if changed_since else []
    with progress_display(verbose) as progress:
        report = commands.check(cfg, models, providers, progress, full=full,
                                rewritten=commands.rewritten(cfg, changes),
                                base=_base(cfg, changed_since, config, allow_missing_gpu, require))
    report.shard = chosen.checked(providers) if chosen is not None else None
    if changed_since:
        report.baseline_changes, report.baseline_diffs = commands.changed_baselines(cfg, changed_since,
                                                                                    changes)
        report.baseline_loosened = commands.loosened_baselines(cfg, changed_since, changes)
        report.baseline_dropped = commands.dropped_baselines(cfg, changes) or None
        commands.restorable(cfg, changed_since, changes, report.models)
    _write_reports(report, reports)
    render_report(report, notices.gpu_workflow(cfg), verbose)
    notices.diff_driver(cfg.root, cfg.baseline_dir)
    raise typer.Exit(report.exit_code)


@app.command("update-baseline")
def update_baseline(config: ConfigOpt = None, model: ModelOpt = None, provider: ProviderOpt = None,
                    source: Annotated[list[Path] | None, typer.Option(
                        "--from", help="Take the runs from result files/folders (export, collect) instead of "
                        "running here: how a GPU runner's results become baselines.")] = None,
                    calibrate: Annotated[bool, typer.Option(
                        "--calibrate", help="Rerun with another thread count and record each layer's "
                        "run-to-run noise: thresholds never go below it.")] = False,
                    shard: ShardOpt = None,
                    out: Annotated[Path | None, typer.Option(
                        "--out", envvar="PARITY_GATE_SHARE_OUT",
                        help="With --shard: copy this share's baseline files and its share.json into this "
                        "folder, for `parity-gate merge --baselines`.")] = None,
                    ) -> None:
    """Run and rewrite the baselines; entries of providers not run here are kept."""
    from gate import commands
    from gate.cli.console import console, err_console, progress_display

    cfg = _load(config)
    models, chosen = _sharded(cfg, cfg.select_models(_split(model)), shard)
    providers = cfg.select_providers(_split(provider))
    if out is not None:  # refused before anything runs, as a folder that cannot hold the share
        from gate.commands.baseline_shards import share_folder
        share_folder(out, chosen is not None)
    if not source:
        extras.require("update-baseline")
    if chosen is not None:
        err_console.print(escape(_shard_line(chosen)), soft_wrap=True)
    notices.backend()
    notices.input_ranges(models)
    with progress_display() as progress:
        updated = commands.update_baseline(cfg, models, providers, progress, sources=source, calibrate=calibrate)
    show_updated(updated)
    console.print(f"[bold green]UPDATED[/bold green] | {count(sum(not u.error for u in updated), 'baseline')}")
    raise_failed(updated)
    if out is not None and chosen is not None:  # only a share recorded whole is handed on
        from gate.commands.baseline_shards import write_share

        handed = count(len(write_share(cfg, chosen, out)), "baseline file")
        console.print(escape(f"shard {chosen.shard}: {handed} → {out}"))


@app.command()
def export(out: Annotated[Path, typer.Option("--out", help="Folder to write <model>/ bundles into.")],
           config: ConfigOpt = None, model: ModelOpt = None, provider: ProviderOpt = None) -> None:
    """Export the models once: ONNX graphs, inputs, and the reference (plus torch providers') fingerprints."""
    from gate import commands
    from gate.cli.console import console, progress_display

    cfg = _load(config)
    models, providers = cfg.select_models(_split(model)), cfg.select_providers(_split(provider))
    extras.require("export")
    notices.backend()
    with progress_display() as progress:
        runs = commands.export_models(cfg, models, providers, out, progress)
    for run in runs:
        status = f"[red]{run.error.error_status}[/red] {escape(run.error.message)}" if run.error else count(len(run.layers), "layer")
        console.print(f"[bold]{run.name}[/bold] → {escape(str(out / run.name))}  {status}", soft_wrap=True)
    failed = [r for r in runs if r.error]
    console.print(("[bold red]ERROR[/bold red]" if failed else "[bold green]EXPORTED[/bold green]")
                  + f" | {count(len(runs), 'model')} to {escape(str(out))}")
    raise typer.Exit(3 if failed else 0)


@app.command()
def collect(source: Annotated[Path, typer.Option("--from", help="A folder written by `parity-gate export`.")],
            out: Annotated[Path, typer.Option("--out", help="Result file to write.")],
            provider: ProviderOpt = None, model: ModelOpt = None,
            config: Annotated[Path | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                                        help="Optional: provider options and isolation settings.")] = None,
            ) -> None:
    """Run ONNX Runtime providers on exported models (no torch needed) and write a result file."""
    from gate import commands
    from gate.cli.console import console, progress_display
    from gate.config import Isolation, ProviderSpec, canonical_provider

    cfg = _load(config) if config is not None else None
    names = _split(provider)
    if cfg is not None:
        providers = tuple(p for p in cfg.select_providers(names) if not p.kind.torch)
    else:
        if not names:
            raise GateError("collect: name the providers to run with --provider (or pass --config)")
        providers = tuple(ProviderSpec(canonical_provider(n)) for n in names)
    extras.require("collect")
    notices.backend()
    with progress_display() as progress:
        runs = commands.collect(source, providers, out, cfg.isolation if cfg else Isolation(), _split(model), progress,
                                config=cfg)
    from gate.verdict.gpu_leg import message, missing_gpu

    for run in runs:
        for p in run.providers:
            console.print(escape(f"{run.name} · {p.name} ({p.target.label}): {p.status}"
                                 + (f" — {p.reason}" if p.reason else "")), soft_wrap=True)
    gone = missing_gpu([p for run in runs for p in run.providers])
    if gone:  # the report fails on it (unless allowed); say so on the leg that has the problem
        console.print(f"[yellow]warning:[/yellow] {escape(message(gone))}", soft_wrap=True)
    console.print(f"[bold green]COLLECTED[/bold green] | {count(len(runs), 'model')} → {escape(str(out))}")


@app.command()
@report_options
def report(files: Annotated[list[Path], typer.Argument(help="Result files (or folders of them) from export/collect.")],
           config: ConfigOpt = None, *, reports: ReportPaths,
           changed_since: SinceOpt = None, allow_missing_gpu: GpuOpt = False, require: RequireOpt = None,
           verbose: VerboseOpt = False) -> None:
    """Merge result files from several runners, compare with the baselines, one verdict."""
    from gate import commands
    from gate.cli.console import render_report

    cfg = _load(config, allow_missing_gpu, require)
    base = _base(cfg, changed_since, config, allow_missing_gpu, require)
    result = commands.report_files(cfg, files, base=base)
    if changed_since:
        result.baseline_changes, result.baseline_diffs = commands.changed_baselines(cfg, changed_since)
        result.baseline_loosened = commands.loosened_baselines(cfg, changed_since, result.baseline_changes)
        result.baseline_dropped = commands.dropped_baselines(cfg, result.baseline_changes) or None
        commands.restorable(cfg, changed_since, result.baseline_changes, result.models)
    _write_reports(result, reports)
    render_report(result, notices.gpu_workflow(cfg), verbose)
    raise typer.Exit(result.exit_code)


@app.command("list")
def list_cases(config: ConfigOpt = None, model: ModelOpt = None, shard: ShardOpt = None) -> None:
    """Print the cases the config expands to (batch sizes, sequence lengths, shapes, input sets,
    opsets), which of them share one export, and the providers; with --shard, those of one shard."""
    from gate.cli.console import console
    from gate.commands.listing import cases

    cfg = _load(config)
    models, chosen = _sharded(cfg, cfg.select_models(_split(model)), shard)
    found = cases(cfg, models)
    for c in found:
        axes = " ".join(f"{k}={v}" for k, v in c.case.items())
        console.print(escape(f"{c.name}  ({c.base}{': ' + axes if axes else ''})  export #{c.export_group}  "
                             f"inputs: {'; '.join(c.inputs)}"), soft_wrap=True)
    providers = found[0].providers if found else []
    console.print(escape(f"{count(len(found), 'case')}, {count(len({c.export_group for c in found}), 'export')}; providers: "
                         f"{', '.join(providers)}"), soft_wrap=True)
    if chosen is not None:
        console.print(escape(_shard_line(chosen)), soft_wrap=True)


@app.command()
def validate(config: ConfigOpt = None, model: ModelOpt = None) -> None:
    """Check the config: import each model's factory, build its inputs and compare them with its baseline's (no model is built)."""
    from gate.cli.console import console, err_console
    from gate.commands.common import display
    from gate.commands.listing import validate as check_inputs

    cfg = _load(config)
    extras.require("validate")
    result = check_inputs(cfg, cfg.select_models(_split(model)))
    for line in result.lines:
        console.print(escape(line), soft_wrap=True)
    for line in result.refused:  # each case's own error line, as a config error's: on stderr
        err_console.print(f"[bold red]error:[/bold red] {escape(line)}", soft_wrap=True)
    notices.install_gaps(cfg)
    notices.orphans(cfg)
    notices.input_ranges(cfg.select_models(_split(model)))
    for m in result.missing:
        console.print(f"[yellow]no baseline:[/yellow] {escape(f'{m.model} ({display(m.path)}): record it with `{m.command}`')}",
                      soft_wrap=True)
    if result.missing:  # check fails these (exit 1): say so now, with the command that records them
        names = ", ".join(m.model for m in result.missing)
        console.print(f"[bold red]MISSING BASELINE[/bold red] | {escape(names)}: "
                      f"{escape(count(len(result.missing), 'case'))} without a baseline; `check` fails until "
                      f"{'it is' if len(result.missing) == 1 else 'they are'} recorded", soft_wrap=True)
        raise typer.Exit(2 if result.refused else 1)
    if result.refused:  # a file or config error, each named above: exit 2, as `check` would
        raise typer.Exit(2)
    console.print(f"[bold green]VALID[/bold green] | {escape(str(cfg.path))}: {count(len(result.lines), 'case')}")


@app.command()
def doctor() -> None:
    """Print versions, providers available here, the fingerprint backend and device class."""
    from gate.cli.console import console
    from gate.core import device
    from gate.core.versions import versions
    from gate.fingerprint import backend, native_error

    for key, value in versions().items():
        console.print(f"{key:12} {value or 'not installed'}")
    console.print(f"{'backend':12} {backend}" + (f" ({native_error})" if backend == "numpy" and native_error else ""),
                  soft_wrap=True)
    console.print(f"{'device':12} {device.cpu_class()} ({device.cpu_name()})")
    _doctor_onnxruntime(console, extras.missing(extras.ORT_STACK))
    names = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if not c.hidden]
    ready = [n for n in names if not extras.missing(extras.NEEDS.get(n, ()))]
    console.print(escape(f"{'commands':12} {', '.join(ready)}"
                         + ("" if len(ready) == len(names) else " (running models needs: pip install 'parity-gate[torch]')")),
                  soft_wrap=True)


def _doctor_onnxruntime(console: Console, absent: list[str]) -> None:
    from gate.github import ortdist

    found = ortdist.installed()
    listed = ", ".join(f"{n} {v}" for n, v in found.items()) or "none"
    console.print(escape(f"{'distribution':12} imports {ortdist.imported() or 'nothing'} (installed: {listed})"),
                  soft_wrap=True)
    if absent:
        console.print(f"{'providers':12} none: {', '.join(absent)} not installed")
    else:
        from gate.runners.ort_session import available_providers

        console.print(f"{'providers':12} {', '.join(available_providers())}")
    warning = ortdist.conflict(found)
    if warning:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)


github_cmds.register(app)
merge_cmd.register(app)
init_cmd.register(app)
show_cmd.register(app)
cache_cmd.register(app)


def main() -> None:
    from gate.core import collector
    from gate.github.actions import inert_streams

    inert_streams()  # in Actions, one writer for every line any command prints

    try:
        with collector.command():
            code = app(standalone_mode=False)
    except GateError as exc:
        from gate.cli.console import err_console

        if env.debug():
            import traceback

            err_console.print(escape("".join(traceback.format_exception(exc)).rstrip()), soft_wrap=True)
        err_console.print(f"[bold red]error:[/bold red] {escape(str(exc))}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except Exception as exc:
        # Usage errors (bad option, missing argument) are click-style exceptions that know how
        # to show themselves; typer vendors click, so test the shape rather than the class.
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(2)
        import traceback

        from gate.cli.console import err_console

        traceback.print_exc()
        name = escape(type(exc).__name__)
        err_console.print(f"[bold red]internal error[/bold red] (exit {INTERNAL_ERROR}): {name} is a bug in "
                          "parity-gate, not in your model or config; the traceback above says where",
                          soft_wrap=True)
        sys.exit(INTERNAL_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
