"""What the commands of the CLI share: reading the config with the command line's additions, the
repeatable options' lists, a shard's models, the extra a command needs, and writing the reports.
Below ``app`` and every subcommand module, which all take these from here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import GateError

if TYPE_CHECKING:
    from gate.commands.shards import ShardPlan
    from gate.config import Config, ModelSpec
    from gate.verdict.types import Report


def _split(values: list[str] | None) -> list[str] | None:
    """Repeatable options also take comma/space separated lists (the action passes one env var)."""
    if not values:
        return None
    out = [v for item in values for v in item.replace(",", " ").split()]
    return out or None


def _load(config: Path | None, allow_missing_gpu: bool = False, require: list[str] | None = None) -> Config:
    from dataclasses import replace

    from gate.commands.common import display
    from gate.config import canonical_provider, find_config, load_config

    cfg = load_config(find_config(config))
    cfg = replace(cfg, allow_missing_gpu=True) if allow_missing_gpu else cfg
    names = [canonical_provider(n) for n in _split(require) or []]
    unknown = [n for n in names if n not in {p.name for p in cfg.providers}]
    if unknown:
        raise GateError(f"--require {unknown[0]}: not a provider {display(cfg.path)} configures "
                        f"({', '.join(p.name for p in cfg.providers)})")
    return replace(cfg, require=tuple(dict.fromkeys(cfg.require + tuple(names)))) if names else cfg


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
    from gate.render.text import count as counted

    loads = " · ".join(f"{load:.0f} s" for load in chosen.loads)
    guessed = f"; {counted(chosen.estimated, 'model')} without a recorded time weighed as the median" \
        if chosen.estimated else ""
    return (f"shard {chosen.shard}: {counted(chosen.held, 'model')} of {chosen.units} ({counted(len(chosen.models), 'case')} "
            f"of {len(chosen.covered)}); recorded seconds per shard: {loads}{guessed}")


def _needs(command: str) -> None:
    """One line naming the missing extra, before a command that runs models imports torch."""
    from gate.cli.extras import require

    require(command)


def _write_reports(report: Report, json_path: Path | None, markdown_path: Path | None, junit_path: Path | None = None) -> None:
    from gate.formats.atomic import atomic_write_text
    from gate.verdict.report_file import write_report

    if json_path:
        write_report(json_path, report)
    if markdown_path:
        from gate.render import render_markdown

        atomic_write_text(markdown_path, render_markdown(report))
    if junit_path:
        from gate.render.junit import render_junit

        atomic_write_text(junit_path, render_junit(report))
