"""``parity-gate cache``: the export cache's folder, the key a CI cache of it is saved under, and
pruning it (docs/configuration.md#the-export-cache). ``gate.cli.app`` calls ``register(app)``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gate.errors import GateError

cache_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                        help="The export cache: where it is, its CI key, pruning it.")

ConfigOpt = Annotated[Path | None, typer.Option("--config", envvar="PARITY_GATE_CONFIG",
                                                 help="Config file (default: as `check` finds it).")]
ModelOpt = Annotated[list[str] | None, typer.Option("--model", "-m", envvar="PARITY_GATE_MODELS", metavar="NAME",
                                                     help="Model (repeatable; default: all).")]


def _folder() -> Path:
    from gate.env import CACHE_DIR as CACHE_ENV
    from gate.env import store_dir

    folder = store_dir()
    if folder is None:
        raise GateError(f"the export cache is off ({CACHE_ENV}=off)")
    return folder


@cache_app.command("dir")
def show_dir() -> None:
    """Print the cache folder (PARITY_GATE_CACHE_DIR, else the user's cache folder)."""
    typer.echo(str(_folder()))


@cache_app.command("key")
def key(config: ConfigOpt = None, model: ModelOpt = None,
        shard: Annotated[str | None, typer.Option("--shard", envvar="PARITY_GATE_SHARD", metavar="K/N",
                                                  help="Only the models of shard K of N (as check --shard).")] = None,
        ) -> None:
    """Print a digest of the content keys the selected baselines record: a CI cache key for the folder."""
    from gate.cli.shared import _load, _sharded, _split
    from gate.commands.cache_key import recorded_keys

    cfg = _load(config)
    models, _ = _sharded(cfg, cfg.select_models(_split(model)), shard)
    typer.echo(recorded_keys(cfg, models))


@cache_app.command("prune")
def prune(max_gb: Annotated[float, typer.Option("--max-gb", help="Keep at most this much, least recently used "
                                                "entries first to go.")] = 20.0) -> None:
    """Remove the least recently used entries past a size."""
    from gate.store import Store

    removed = Store(_folder()).prune(limit=int(max_gb * 2**30))
    typer.echo(f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'}")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
