"""What the commands of the CLI share: reading the config with the command line's additions, the
repeatable options' lists, a shard's models, the extra a command needs, what a recording did, and
writing the reports.
Below ``app`` and every subcommand module, which all take these from here."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gate.errors import GateError
from gate.render.text import count

if TYPE_CHECKING:
    from gate.commands.shards import ShardPlan
    from gate.commands.update import Updated
    from gate.config import Config, ModelSpec
    from gate.verdict.types import Report

ReportPaths = dict[str, Path | None]  # renderer name -> where to write its report (``report_options``)


def _split(values: list[str] | None) -> list[str] | None:
    """Repeatable options also take comma/space separated lists (the action passes one env var)."""
    return [v for item in values or () for v in item.replace(",", " ").split()] or None


def _load(config: Path | None, allow_missing_gpu: bool = False, require: list[str] | None = None) -> Config:
    from gate.commands.common import display
    from gate.config import canonical_provider, find_config, load_config

    cfg = load_config(find_config(config))
    names = [canonical_provider(n) for n in _split(require) or []]
    unknown = [n for n in names if n not in {p.name for p in cfg.providers}]
    if unknown:
        raise GateError(f"--require {unknown[0]}: not a provider {display(cfg.path)} configures "
                        f"({', '.join(p.name for p in cfg.providers)})")
    return _with_flags(cfg, allow_missing_gpu, require)


def _with_flags(cfg: Config, allow_missing_gpu: bool, require: list[str] | None) -> Config:
    """``cfg`` with the command line's --allow-missing-gpu and --require (the providers it configures)."""
    from gate.config import canonical_provider

    cfg = replace(cfg, allow_missing_gpu=True) if allow_missing_gpu else cfg
    configured = {p.name for p in cfg.providers}
    names = [n for n in (canonical_provider(n) for n in _split(require) or []) if n in configured]
    return replace(cfg, require=tuple(dict.fromkeys(cfg.require + tuple(names)))) if names else cfg


def _base(cfg: Config, since: str | None, config: Path | None, allow_missing_gpu: bool,
          require: list[str] | None) -> Config | str | None:
    """The config at ``since`` for ``--changed-since`` (None without it): with the same command-line flags,
    which are the workflow's, not the config change's."""
    from gate import commands

    if not since:
        return None
    commands.one_commit(cfg, since)  # before git reads it as anything else
    base = commands.base_config(cfg, since, None if config else Path.cwd())
    if base is None or isinstance(base, str):
        return base
    base = _with_flags(base, allow_missing_gpu, require)
    return None if base == cfg else base


def _sharded(cfg: Config, models: tuple[ModelSpec, ...],
             shard: str | None) -> tuple[tuple[ModelSpec, ...], ShardPlan | None]:
    """(the models to run, the plan) for ``--shard K/N``; (``models``, None) without it."""
    if not shard:
        return models, None
    from gate.commands.shards import plan
    from gate.config.shards import Shard

    chosen = plan(cfg, models, Shard.parse(shard))
    return chosen.models, chosen


def _shard_line(chosen: ShardPlan) -> str:
    """What this leg runs of the whole, and how the legs are balanced (recorded seconds)."""
    loads = " · ".join(f"{load:.0f} s" for load in chosen.loads)
    guessed = (f"; {count(chosen.estimated, 'model')} without a recorded time weighed as the median"
               if chosen.estimated else "")
    return (f"shard {chosen.shard}: {count(chosen.held, 'model')} of {chosen.units} ({count(len(chosen.models), 'case')} "
            f"of {len(chosen.covered)}); recorded seconds per shard: {loads}{guessed}")


def show_updated(updated: list[Updated]) -> None:
    """Each model's line, as update-baseline, init and add print it: the baseline written, what changed
    and what ``check`` will fail on; or why it was not updated."""
    from rich.markup import escape

    from gate.cli.console import console

    for u in updated:
        if u.error:
            why = escape(f"{u.error_status}: {u.error}")
            console.print(f"[bold red]{u.model}[/bold red] not updated: {why}", soft_wrap=True)
            continue
        console.print(f"[bold]{u.model}[/bold] → {escape(str(u.path))}")
        for line in u.changes:
            console.print(f"  {escape(line)}", soft_wrap=True)
        for line in u.warnings:
            console.print(f"  [yellow]warning:[/yellow] {escape(line)}", soft_wrap=True)


def raise_failed(updated: list[Updated]) -> None:
    """ModelError (exit 3) when a model could not run (its baseline left as it was) or was recorded
    without its export (what ran without a graph is written; the export still fails the command)."""
    from gate.core.failure import ModelError
    from gate.core.status import ErrorStatus

    failed = [u for u in updated if u.error]
    if failed:
        first = failed[0]
        kept = "its baseline" if len(failed) == 1 else "their baselines"
        raise ModelError(f"{count(len(failed), 'model')} could not run, {kept} left as before (first: "
                         f"{first.model}: {first.error_status}: {first.error})",
                         first.error_status or ErrorStatus.INFER_FAIL)
    for u in updated:
        if u.unexported:
            raise ModelError(f"{u.model}: recorded the reference and the PyTorch providers only, no ONNX "
                             f"Runtime entry: {u.unexported.message}", ErrorStatus.EXPORT_FAIL)


def report_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` with its keyword-only ``reports`` parameter turned into one ``--<name> PATH`` option per
    renderer (``gate.render.renderers``); it receives them as ``reports``, a path or None per name."""
    from gate.render.renderers import RENDERERS

    signature = inspect.signature(command, eval_str=True)
    params = []
    for p in signature.parameters.values():
        params += [p] if p.name != "reports" else [
            inspect.Parameter(r.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
                Path | None, typer.Option(f"--{r.name}", envvar=r.envvar, help=r.help)]) for r in RENDERERS]

    @functools.wraps(command)
    def with_reports(**kwargs: Any) -> None:
        reports = {r.name: kwargs.pop(r.name) for r in RENDERERS}
        command(**kwargs, reports=reports)

    with_reports.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    with_reports.__annotations__ = {p.name: p.annotation for p in params}
    return with_reports


def _write_reports(report: Report, paths: ReportPaths) -> None:
    """Each report file asked for, replaced atomically, in the renderers' order."""
    from gate.formats.atomic import atomic_write_text
    from gate.render.renderers import RENDERERS

    for r in RENDERERS:
        path = paths.get(r.name)
        if path:
            try:  # a folder that does not exist yet is made, as a test runner makes its report's
                path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(path, r.render(report))
            except OSError as e:
                raise GateError(f"--{r.name} `{path}`: cannot write it: {e.strerror or e}") from None
